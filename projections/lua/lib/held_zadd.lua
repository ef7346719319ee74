-- held_zadd(key, score, member): while replay holds its writes (hold_writes.lua), a ZADD of one
-- member, held; the callers write at once when HELD is false
--- @include "projections/lua/lib/hold_writes.lua"
local function held_zadd(key, score, member)
  held_in('zsets', key)[member] = score
end
