-- apply_job_completed(e)
--- @include "projections/lua/lib/stop_run.lua"
local function apply_job_completed(e)
  return stop_run(e, 'completed', true, nil, 'total_jobs_completed')
end
