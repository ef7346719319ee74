-- apply_launcher_triggered(e): a debounced @event launcher matched an event: it fires at due_at,
-- unless a later match moves that on
--- @include "projections/lua/lib/launcher_next.lua"
local function apply_launcher_triggered(e)
  local d = e.data
  redis.call('HSET', K.launcher(d.launcher), 'last_trigger', d.trigger)
  launcher_next(d.launcher, d.due_at)
end
