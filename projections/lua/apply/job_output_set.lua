-- apply_job_output_set(e): the job's output is replaced
local function apply_job_output_set(e)
  redis.call('HSET', K.job(e.job), 'output', e.data.output)
end
