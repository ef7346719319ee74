-- apply_job_failed(e): ended, or waiting to retry at e.data.retry_at
local function apply_job_failed(e)
  apply_job_stopped(e, 'failed', e.data.ended, e.data.retry_at, 'total_jobs_failed')
end
