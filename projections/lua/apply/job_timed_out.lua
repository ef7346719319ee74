-- apply_job_timed_out(e): ended, or waiting to retry at e.data.retry_at
local function apply_job_timed_out(e)
  apply_job_stopped(e, 'timed_out', e.data.ended, e.data.retry_at, 'total_jobs_timed_out')
end
