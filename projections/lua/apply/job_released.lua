-- apply_job_released(e): a scheduled job's run_at came; it joins its queue
--- @include "projections/lua/lib/enter_queue.lua"
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/load_job.lua"
local function apply_job_released(e)
  local job = load_job(e.job)
  leave_place(e.job, job)
  enter_queue(e.job, job, e.at)
end
