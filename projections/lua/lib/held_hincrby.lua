-- held_hincrby(key, field, n): HINCRBY by the number n, held while replay holds (see hold_writes.lua); an n
-- of 0 still makes the field
--- @include "projections/lua/lib/hold_writes.lua"
local function held_hincrby(key, field, n)
  local held = HELD
  if not held then
    redis.call('HINCRBY', key, field, n)
    return
  end
  local fields = held.counts[key]
  if not fields then
    fields = {}
    held.counts[key] = fields
  end
  fields[field] = (fields[field] or 0) + n
end
