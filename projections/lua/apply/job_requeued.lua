-- apply_job_requeued(e): back to the queue, without what the last run left (started_at, ended_at,
-- last_heartbeat, output: the history keeps them).  Every requeue counts in total_jobs_retried, an
-- automatic retry in retries_attempted too.  A requeue of an ended job takes its unique_key back if
-- no other live job holds it, and is pending again for its launcher.  keep_run (v1 events only):
-- the last run's fields stay and only an automatic retry counts, as v1 applied it.  A bulk
-- operation's requeue counts in its record.
--- @include "projections/lua/lib/count_bulk.lua"
--- @include "projections/lua/lib/enter_queue.lua"
--- @include "projections/lua/lib/held_hincrby.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/load_job.lua"
--- @include "projections/lua/lib/track_pending.lua"
local function apply_job_requeued(e)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  local key = K.job(id)
  if e.data.retry then redis.call('HINCRBY', key, 'retries_attempted', 1) end
  if e.data.retry or not e.data.keep_run then
    if HELD then
      held_hincrby(K.stats, 'total_jobs_retried', 1)
    else
      redis.call('HINCRBY', K.stats, 'total_jobs_retried', 1)
    end
  end
  if job.ended == '1' and job.unique_key then
    redis.call('HSETNX', K.queue_unique(job.queue), job.unique_key, id)
  end
  if job.ended == '1' then track_pending(id, job.launcher, true) end
  local stale = {'ended', 'ended_at'}
  if not e.data.keep_run then
    for _, name in ipairs({'started_at', 'last_heartbeat', 'output'}) do
      if job[name] then stale[#stale + 1] = name end
    end
  end
  redis.call('HDEL', key, unpack(stale))
  enter_queue(id, job, e.at)
  count_bulk(e)
end
