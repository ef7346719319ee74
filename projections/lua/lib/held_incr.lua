-- held_incr(key): while replay holds its writes (hold_writes.lua), an INCR, held; the new value.  The
-- callers write at once when HELD is false
--- @include "projections/lua/lib/hold_writes.lua"
local function held_incr(key)
  local strings = HELD.strings
  local n = (strings[key] or redis.call('GET', key) or 0) + 1
  strings[key] = n
  return n
end
