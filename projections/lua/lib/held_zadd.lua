-- held_zadd(key, score, member): ZADD of one member, held while replay holds (see hold_writes.lua)
--- @include "projections/lua/lib/hold_writes.lua"
local function held_zadd(key, score, member)
  local held = HELD
  if not held then
    redis.call('ZADD', key, score, member)
    return
  end
  local members = held.zsets[key]
  if not members then
    members = {}
    held.zsets[key] = members
  end
  members[member] = score
end
