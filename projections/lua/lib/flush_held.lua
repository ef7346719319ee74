-- flush_held(): write what the held_* functions held since hold_writes(), and hold no more: per sorted set
-- one ZREM of its removed members and one ZADD of the others (a member's last write is the one
-- that counts, so the order of the two does not matter), in calls of at most FLUSH_CHUNK values;
-- an HINCRBY per counter, a SET per string; then what pieces asked to run (HELD.after)
--- @include "projections/lua/lib/hold_writes.lua"
local FLUSH_CHUNK = 1000  -- values per call (an even number: ZADD takes pairs)
local function flush_held()
  local held = HELD
  if not held then return end
  HELD = false
  for key, members in pairs(held.zsets) do
    local added, removed = {}, {}
    for member, score in pairs(members) do
      if score then
        added[#added + 1] = score
        added[#added + 1] = member
      else
        removed[#removed + 1] = member
      end
    end
    for i = 1, #removed, FLUSH_CHUNK do
      redis.call('ZREM', key, unpack(removed, i, math.min(i + FLUSH_CHUNK - 1, #removed)))
    end
    for i = 1, #added, FLUSH_CHUNK do
      redis.call('ZADD', key, unpack(added, i, math.min(i + FLUSH_CHUNK - 1, #added)))
    end
  end
  for key, fields in pairs(held.counts) do
    for field, n in pairs(fields) do redis.call('HINCRBY', key, field, n) end
  end
  for key, value in pairs(held.strings) do
    if type(value) == 'number' then value = string.format('%d', value) end
    redis.call('SET', key, value)
  end
  for i = 1, #held.after do held.after[i]() end
end
