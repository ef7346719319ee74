-- launch(now, id, launcher, due_at, next_at, missed, trigger, source): one firing time of a launcher
-- (trigger: the event an @event launcher fires on, in partition source's stream, nil: its own).  It is
-- skipped (launcher_skipped) when its queue is gone, when max_pending of its jobs have not ended
-- (0: no limit), or when a live job holds the template's unique_key; else it creates a job from
-- its template (job_created) and records the firing (launcher_fired).  Both move it on to next_at
-- (nil: none).  Every event of a firing records the launcher, `launcher:ID`, as its actor (the
-- job_created too: see new_job.lua).  Returns 1 fired, 2 skipped.
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/job_defaults.lua"
--- @include "ledger/lua/lib/new_job.lua"
local function launch(now, id, launcher, due_at, next_at, missed, trigger, source)
  local data = {launcher = tonumber(id), due_at = due_at, next_at = next_at, trigger = trigger, source = source}
  local max_pending = tonumber(launcher.max_pending or 0)
  local queue = job_defaults(launcher.queue)
  if not queue then
    data.reason = 'queue_missing'
  elseif max_pending > 0 and redis.call('SCARD', K.launcher_pending(id)) >= max_pending then
    data.reason = 'max_pending'
  else
    local options = cjson.decode(launcher.template)
    local job, created = new_job(now, launcher.queue, queue, options, launcher.input or '', id)
    if created then
      data.job, data.missed = job, missed
      emit(now, 'launcher_fired', nil, launcher.queue, data, 'launcher:' .. id)
      return 1
    end
    data.reason = 'unique_key'
  end
  emit(now, 'launcher_skipped', nil, launcher.queue, data, 'launcher:' .. id)
  return 2
end
