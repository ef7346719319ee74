-- apply_job_cancelled(e): a bulk operation's cancel counts in its record
--- @include "projections/lua/lib/count_bulk.lua"
--- @include "projections/lua/lib/stop_run.lua"
local function apply_job_cancelled(e)
  count_bulk(e)
  return stop_run(e, 'cancelled', true, nil, 'total_jobs_cancelled')
end
