-- apply_launcher_created(e): a new launcher, its spec and counters, firing at next_at (if any); an
-- @event launcher matches only events after this one (last_trigger starts here).  Created with an
-- Idempotency-Key, it records the key, its answer the launcher's id.  A named launcher is found by its
-- name (K.launcher_names).
--- @include "projections/lua/lib/launcher_next.lua"
--- @include "projections/lua/lib/remember_request.lua"
--- @include "projections/lua/lib/set_fields.lua"
local function apply_launcher_created(e)
  local d, id = e.data, e.data.launcher
  if id > tonumber(redis.call('GET', K.launcher_id) or '0') then redis.call('SET', K.launcher_id, id) end
  local key = K.launcher(id)
  local arguments = d.arguments
  if type(arguments) == 'table' then arguments = cjson.encode(arguments) end
  redis.call('HSET', key, 'type', d.type, 'arguments', arguments, 'queue', e.queue, 'template', d.template,
    'max_pending', d.max_pending, 'debounce', d.debounce, 'created_at', e.at, 'fired', 0, 'skipped', 0)
  set_fields(key, d, {'input', 'tz', 'name', 'declared'})
  if d.name then redis.call('HSET', K.launcher_names, d.name, id) end
  if d.type == '@event' then
    redis.call('HSET', key, 'last_trigger', e.id)
    redis.call('SADD', K.event_launchers, id)
  end
  launcher_next(id, d.next_at)
  redis.call('SADD', K.launchers, id)
  remember_request(e, id)
end
