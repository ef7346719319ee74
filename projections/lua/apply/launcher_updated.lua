-- apply_launcher_updated(e): a named launcher takes its new declaration whole (what it left out is
-- gone), on the entry's queue; its counters stay; a hold ends; it fires next at next_at (if any).
-- Turned into an @event launcher, it matches the events after this one.
--- @include "projections/lua/lib/launcher_next.lua"
--- @include "projections/lua/lib/set_fields.lua"
local function apply_launcher_updated(e)
  local d, id = e.data, e.data.launcher
  local key = K.launcher(id)
  local arguments = d.arguments
  if type(arguments) == 'table' then arguments = cjson.encode(arguments) end
  local was = redis.call('HGET', key, 'type')
  redis.call('HDEL', key, 'input', 'tz', 'declared', 'held')
  redis.call('HSET', key, 'type', d.type, 'arguments', arguments, 'queue', e.queue, 'template', d.template,
    'max_pending', d.max_pending, 'debounce', d.debounce)
  set_fields(key, d, {'input', 'tz', 'declared'})
  if d.type == '@event' and was ~= '@event' then
    redis.call('HSET', key, 'last_trigger', e.id)
    redis.call('SADD', K.event_launchers, id)
  elseif d.type ~= '@event' then
    redis.call('SREM', K.event_launchers, id)
  end
  launcher_next(id, d.next_at)
end
