-- apply_job_expired(e): job_expired and job_deleted: the job leaves the projections (not its
-- history); an expiry counts in its queue's totals, a bulk operation's delete in its record
--- @applies "job_deleted"
--- @include "projections/lua/lib/count_bulk.lua"
--- @include "projections/lua/lib/count_outcome.lua"
--- @include "projections/lua/lib/forget_job.lua"
--- @include "projections/lua/lib/load_job.lua"
local function apply_job_expired(e)
  local job = load_job(e.job)
  forget_job(e.job, job)
  if e.type == 'job_expired' then count_outcome(job.queue, 'expired') end
  count_bulk(e)
end
