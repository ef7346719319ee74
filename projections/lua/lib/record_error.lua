-- record_error(id, job, at, err): append {at, attempt, kind, message} to the job's errors
local function record_error(id, job, at, err)
  local errors = {}
  if job.errors then errors = cjson.decode(job.errors) end
  errors[#errors + 1] = {at = at, attempt = tonumber(job.attempt or 0), kind = err.kind, message = err.message or ''}
  redis.call('HSET', K.job(id), 'errors', cjson.encode(errors))
end
