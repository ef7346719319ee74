-- apply_launcher_fired(e): the launcher created a job (its job_created came just before): counted,
-- and it fires next at next_at (if any); fired by hand (`manual`), its schedule is left as it was
--- @include "projections/lua/lib/launcher_next.lua"
--- @include "projections/lua/lib/present.lua"
--- @include "projections/lua/lib/trigger_field.lua"
local function apply_launcher_fired(e)
  local d = e.data
  local key = K.launcher(d.launcher)
  redis.call('HINCRBY', key, 'fired', 1)
  redis.call('HSET', key, 'last_fired_at', e.at, 'last_job', d.job)
  if present(d.trigger) then redis.call('HSET', key, trigger_field(d), d.trigger) end
  if not d.manual then launcher_next(d.launcher, d.next_at) end
end
