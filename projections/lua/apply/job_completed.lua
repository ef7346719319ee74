-- apply_job_completed(e)
local function apply_job_completed(e)
  apply_job_stopped(e, 'completed', true, nil, 'total_jobs_completed')
end
