-- apply_launcher_skipped(e): a firing time passed without a job: counted; it fires next at next_at;
-- `held`: it is held back (for `reason`), and stays due at next_at (its due_at) until released
--- @include "projections/lua/lib/launcher_next.lua"
--- @include "projections/lua/lib/present.lua"
--- @include "projections/lua/lib/trigger_field.lua"
local function apply_launcher_skipped(e)
  local d = e.data
  local key = K.launcher(d.launcher)
  redis.call('HINCRBY', key, 'skipped', 1)
  if d.held then redis.call('HSET', key, 'held', d.reason) end
  if present(d.trigger) then redis.call('HSET', key, trigger_field(d), d.trigger) end
  launcher_next(d.launcher, d.next_at)
end
