-- apply_job_started(e): a worker took the job: a new attempt begins, without what the previous one
-- left (its heartbeat, end, worker, progress and message: those stay in the job's history).  The
-- start counts in its queue's totals, and how long it waited, since it joined the queue (queued_at,
-- or created_at when it joined as it was created), in the queue's wait time histogram.
--- @include "projections/lua/lib/count_outcome.lua"
--- @include "projections/lua/lib/count_running_key.lua"
--- @include "projections/lua/lib/held_zadd.lua"
--- @include "projections/lua/lib/history_field.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/load_job.lua"
--- @include "projections/lua/lib/observe_duration.lua"
--- @include "projections/lua/lib/run_deadline.lua"
local function apply_job_started(e)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  local key = K.job(id)
  local fields = {'status', 'running', 'started_at', e.at, 'attempt', e.data.attempt}
  local worker = e.data.worker
  if worker ~= nil and worker ~= cjson.null then  -- present(worker), spelled out: a call costs more
    fields[#fields + 1] = 'worker'; fields[#fields + 1] = worker
  else
    worker = nil
  end
  local recorded = history_field(job, e, fields)
  redis.call('HSET', key, unpack(fields))
  -- what the previous attempt left, cleared with one call; a first attempt left nothing, and makes
  -- no table for it
  if job.last_heartbeat or job.ended_at or job.progress or job.message or (job.worker and not worker) then
    local stale = {}
    if job.last_heartbeat then stale[#stale + 1] = 'last_heartbeat' end
    if job.ended_at then stale[#stale + 1] = 'ended_at' end
    if job.progress then stale[#stale + 1] = 'progress' end
    if job.message then stale[#stale + 1] = 'message' end
    if job.worker and not worker then stale[#stale + 1] = 'worker' end
    redis.call('HDEL', key, unpack(stale))
  end
  if HELD then
    held_zadd(K.queue_status(job.queue, 'running'), id, id)
  else
    redis.call('ZADD', K.queue_status(job.queue, 'running'), id, id)
  end
  count_running_key(job, 1)
  count_outcome(job.queue, 'started')
  observe_duration(job.queue, 'wait', e.at - (job.queued_at or job.created_at))
  local deadline = run_deadline(job, e.at, e.at)
  if deadline then
    if HELD then held_zadd(K.due_run, deadline, id) else redis.call('ZADD', K.due_run, deadline, id) end
  end
  return recorded
end
