-- held_hincrby(key, field, n): while replay holds its writes (hold_writes.lua), an HINCRBY by the
-- number n, held (an n of 0 still makes the field); the callers write at once when HELD is false
--- @include "projections/lua/lib/hold_writes.lua"
local function held_hincrby(key, field, n)
  local fields = held_in('counts', key)
  fields[field] = (fields[field] or 0) + n
end
