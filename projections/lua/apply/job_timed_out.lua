-- apply_job_timed_out(e): ended, or waiting to retry at e.data.retry_at
--- @include "projections/lua/lib/stop_run.lua"
local function apply_job_timed_out(e)
  return stop_run(e, 'timed_out', e.data.ended, e.data.retry_at, 'total_jobs_timed_out')
end
