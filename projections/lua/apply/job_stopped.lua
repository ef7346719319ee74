-- apply_job_stopped(e, status, ended, retry_at, stat): the shared step of completed, failed,
-- timed_out and cancelled: leave the current place, record the end of the run (and its error),
-- enter the next place
local function apply_job_stopped(e, status, ended, retry_at, stat)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  local key = K.job(id)
  redis.call('HSET', key, 'status', status, 'ended_at', e.at)
  if present(e.data.output) then redis.call('HSET', key, 'output', e.data.output) end
  if present(e.data.error) then record_error(id, job, e.at, e.data.error) end
  enter_stopped(id, job, status, ended, e.at, retry_at)
  redis.call('HINCRBY', K.stats, stat, 1)
end
