-- apply_job_failed(e): ended, or waiting to retry at e.data.retry_at
--- @include "projections/lua/lib/stop_run.lua"
local function apply_job_failed(e)
  return stop_run(e, 'failed', e.data.ended, e.data.retry_at, 'total_jobs_failed')
end
