-- apply_launcher_released(e): a held-back launcher is no longer held: the firing times that passed while
-- it was held count as skipped, and it fires next at next_at (if any)
--- @include "projections/lua/lib/launcher_next.lua"
local function apply_launcher_released(e)
  local d = e.data
  local key = K.launcher(d.launcher)
  redis.call('HDEL', key, 'held')
  redis.call('HINCRBY', key, 'skipped', d.skipped)
  launcher_next(d.launcher, d.next_at)
end
