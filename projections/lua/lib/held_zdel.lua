-- held_zdel(key): DEL of a sorted set that held_zadd and held_zrem write: at once, and what was held
-- for it is dropped
--- @include "projections/lua/lib/hold_writes.lua"
local function held_zdel(key)
  if HELD then HELD.zsets[key] = nil end
  redis.call('DEL', key)
end
