-- held_zrem(key, member): while replay holds its writes (hold_writes.lua), a ZREM of one member,
-- held; the callers write at once when HELD is false
--- @include "projections/lua/lib/hold_writes.lua"
local function held_zrem(key, member)
  held_in('zsets', key)[member] = false
end
