-- apply_job_ended(e): a job waiting to retry ends where it is (its queue is gone); it ended now, so
-- ended_at moves to e.at and expiry counts from there (expires_after after ended_at)
--- @include "projections/lua/lib/enter_stopped.lua"
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/load_job.lua"
local function apply_job_ended(e)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  enter_stopped(id, job, job.status, true, e.at, nil, {'ended_at', e.at})
end
