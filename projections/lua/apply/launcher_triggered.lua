-- apply_launcher_triggered(e): a debounced @event launcher matched an event: it fires at due_at,
-- unless a later match moves that on; `source`: the partition whose stream holds the trigger
-- (absent: the launcher's own)
--- @include "projections/lua/lib/launcher_next.lua"
--- @include "projections/lua/lib/trigger_field.lua"
local function apply_launcher_triggered(e)
  local d = e.data
  redis.call('HSET', K.launcher(d.launcher), trigger_field(d), d.trigger)
  launcher_next(d.launcher, d.due_at)
end
