-- apply_job_started(e): a worker took the job: a new attempt begins
local function apply_job_started(e)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  local key = K.job(id)
  redis.call('HSET', key, 'status', 'running', 'started_at', e.at, 'attempt', e.data.attempt)
  redis.call('HDEL', key, 'last_heartbeat', 'ended_at', 'worker')
  if present(e.data.worker) then redis.call('HSET', key, 'worker', e.data.worker) end
  redis.call('ZADD', K.queue_status(job.queue, 'running'), id, id)
  count_running_key(job, 1)
  local deadline = run_deadline(job, e.at, e.at)
  if deadline then redis.call('ZADD', K.due_run, deadline, id) end
end
