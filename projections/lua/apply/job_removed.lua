-- apply_job_removed(e): job_expired and job_deleted: the job leaves the projections (not its history)
local function apply_job_removed(e)
  forget_job(e.job, load_job(e.job))
end
