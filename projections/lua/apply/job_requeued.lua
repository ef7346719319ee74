-- apply_job_requeued(e): back to the queue; an automatic retry counts in retries_attempted, a manual
-- requeue of an ended job takes its unique_key back if no other live job holds it, and is pending
-- again for its launcher
local function apply_job_requeued(e)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  local key = K.job(id)
  if e.data.retry then
    redis.call('HINCRBY', key, 'retries_attempted', 1)
    redis.call('HINCRBY', K.stats, 'total_jobs_retried', 1)
  end
  if job.ended == '1' and job.unique_key then
    redis.call('HSETNX', K.queue_unique(job.queue), job.unique_key, id)
  end
  if job.ended == '1' then track_pending(id, job.launcher, true) end
  redis.call('HDEL', key, 'ended', 'ended_at')
  enter_queue(id, job, e.at)
end
