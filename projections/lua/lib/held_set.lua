-- held_set(key, value): SET, held while replay holds (see hold_writes.lua)
--- @include "projections/lua/lib/hold_writes.lua"
local function held_set(key, value)
  if HELD then HELD.strings[key] = value else redis.call('SET', key, value) end
end
