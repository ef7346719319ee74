-- held_zrem(key, member): ZREM of one member, held while replay holds (see hold_writes.lua)
--- @include "projections/lua/lib/hold_writes.lua"
local function held_zrem(key, member)
  local held = HELD
  if not held then
    redis.call('ZREM', key, member)
    return
  end
  local members = held.zsets[key]
  if not members then
    members = {}
    held.zsets[key] = members
  end
  members[member] = false
end
