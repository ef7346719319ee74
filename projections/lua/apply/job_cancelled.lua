-- apply_job_cancelled(e)
--- @include "projections/lua/lib/stop_run.lua"
local function apply_job_cancelled(e)
  return stop_run(e, 'cancelled', true, nil, 'total_jobs_cancelled')
end
