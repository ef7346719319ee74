-- launch(now, id, launcher, due_at, next_at, missed, trigger, source, hold): one firing time of a
-- launcher (trigger: the event an @event launcher fires on, in partition source's stream, nil: its
-- own).  It is skipped (launcher_skipped) when held back (held_back.lua: its queue is gone,
-- max_pending of its jobs have not ended, or a live job holds the template's unique_key); else it
-- creates a job from its template (job_created) and records the firing (launcher_fired).  Both move
-- it on to next_at (nil: none), except a skip with `hold` (a @cron or @interval launcher's): the
-- launcher is then held back, still due at due_at, and appends nothing more until what held it is
-- gone (fire_launcher.lua releases it).  Every event of a firing records the launcher, `launcher:ID`,
-- as its actor (the job_created too: see new_job.lua).  Returns 1 fired, 2 skipped, 5 held back.
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/held_back.lua"
--- @include "ledger/lua/lib/job_defaults.lua"
--- @include "ledger/lua/lib/new_job.lua"
local function launch(now, id, launcher, due_at, next_at, missed, trigger, source, hold)
  local data = {launcher = tonumber(id), due_at = due_at, next_at = next_at, trigger = trigger, source = source}
  local queue = job_defaults(launcher.queue)
  data.reason = held_back(id, launcher, queue)
  if not data.reason then
    local options = cjson.decode(launcher.template)
    local job, created = new_job(now, launcher.queue, queue, options, launcher.input or '', id)
    if created then
      data.job, data.missed = job, missed
      emit(now, 'launcher_fired', nil, launcher.queue, data, 'launcher:' .. id)
      return 1
    end
    data.reason = 'unique_key'
  end
  if hold then
    data.next_at, data.held = due_at, true
    emit(now, 'launcher_skipped', nil, launcher.queue, data, 'launcher:' .. id)
    return 5
  end
  emit(now, 'launcher_skipped', nil, launcher.queue, data, 'launcher:' .. id)
  return 2
end
