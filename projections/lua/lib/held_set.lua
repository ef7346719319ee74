-- held_set(key, value): while replay holds its writes (hold_writes.lua), a SET, held; the callers
-- write at once when HELD is false
--- @include "projections/lua/lib/hold_writes.lua"
local function held_set(key, value)
  HELD.strings[key] = value
end
