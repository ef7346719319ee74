-- held_incr(key): INCR, held while replay holds (see hold_writes.lua); the new value
--- @include "projections/lua/lib/hold_writes.lua"
local function held_incr(key)
  local held = HELD
  if not held then return redis.call('INCR', key) end
  local n = (held.strings[key] or redis.call('GET', key) or 0) + 1
  held.strings[key] = n
  return n
end
