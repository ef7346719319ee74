-- apply_job_cancelled(e)
local function apply_job_cancelled(e)
  apply_job_stopped(e, 'cancelled', true, nil, 'total_jobs_cancelled')
end
