-- apply_launcher_paused(e): the launcher fires no more and forgets its next firing (and any hold)
--- @include "projections/lua/lib/launcher_next.lua"
local function apply_launcher_paused(e)
  local id = e.data.launcher
  redis.call('HSET', K.launcher(id), 'paused', 1)
  redis.call('HDEL', K.launcher(id), 'held')
  launcher_next(id, nil)
end
