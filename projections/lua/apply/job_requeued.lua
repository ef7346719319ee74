-- apply_job_requeued(e): back to the queue; an automatic retry counts in retries_attempted
local function apply_job_requeued(e)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  local key = K.job(id)
  if e.data.retry then
    redis.call('HINCRBY', key, 'retries_attempted', 1)
    redis.call('HINCRBY', K.stats, 'total_jobs_retried', 1)
  end
  redis.call('HSET', key, 'status', 'queued')
  redis.call('HDEL', key, 'ended', 'ended_at')
  enter_queue(id, job)
end
