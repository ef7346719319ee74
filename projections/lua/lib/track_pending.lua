-- track_pending(id, launcher, pending): count a job in (true) or out of (false) the pending set of
-- the launcher that created it (launcher: its id, or nil for none); a job joins only the set of a
-- launcher that exists
--- @include "projections/lua/lib/present.lua"
local function track_pending(id, launcher, pending)
  if not present(launcher) then return end
  if not pending then
    redis.call('SREM', K.launcher_pending(launcher), id)
  elseif redis.call('EXISTS', K.launcher(launcher)) == 1 then
    redis.call('SADD', K.launcher_pending(launcher), id)
  end
end
