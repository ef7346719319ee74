-- apply_job_expired(e): job_expired and job_deleted: the job leaves the projections (not its
-- history); a bulk operation's delete counts in its record
--- @applies "job_deleted"
--- @include "projections/lua/lib/count_bulk.lua"
--- @include "projections/lua/lib/forget_job.lua"
--- @include "projections/lua/lib/load_job.lua"
local function apply_job_expired(e)
  forget_job(e.job, load_job(e.job))
  count_bulk(e)
end
