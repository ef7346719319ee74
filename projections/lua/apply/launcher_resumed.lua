-- apply_launcher_resumed(e): the launcher fires again from next_at (if any); it matches (an @event
-- launcher) only events from now on
--- @include "projections/lua/lib/launcher_next.lua"
local function apply_launcher_resumed(e)
  local id = e.data.launcher
  local key = K.launcher(id)
  redis.call('HDEL', key, 'paused')
  redis.call('HSET', key, 'resumed_at', e.at)
  if redis.call('HGET', key, 'type') == '@event' then redis.call('HSET', key, 'last_trigger', e.id) end
  launcher_next(id, e.data.next_at)
end
