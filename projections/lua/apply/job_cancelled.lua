-- apply_job_cancelled(e)
--- @include "projections/lua/lib/stop_run.lua"
local function apply_job_cancelled(e)
  stop_run(e, 'cancelled', true, nil, 'total_jobs_cancelled')
end
