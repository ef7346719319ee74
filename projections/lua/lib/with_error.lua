-- with_error(job, at, err): the job's errors, as JSON text, with {at, attempt, kind, message} appended
-- (and the traceback, when the error has one)
local function with_error(job, at, err)
  local errors = {}
  if job.errors then errors = cjson.decode(job.errors) end
  errors[#errors + 1] = {at = at, attempt = tonumber(job.attempt or 0), kind = err.kind, message = err.message or '',
    traceback = err.traceback}
  return cjson.encode(errors)
end
