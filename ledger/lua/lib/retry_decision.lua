-- retry_decision(job, now, kind): whether a run that just stopped with an error of this kind ends
-- the job, and if not when it is retried.  It ends when no retry is left, when no_retry_on names
-- the kind, or when retry_on is set and does not name it.  The delay is retry_delays[n + 1] (the
-- last one repeating), else the exponential retry_backoff, else 0.
local function retry_decision(job, now, kind)
  local attempted = tonumber(job.retries_attempted or 0)
  if attempted >= tonumber(job.retries or 0) then return true, nil end
  local function names(list) -- list: JSON text or nil
    if not list then return false end
    for _, k in ipairs(cjson.decode(list)) do if k == kind then return true end end
    return false
  end
  if names(job.no_retry_on) or (job.retry_on and not names(job.retry_on)) then return true, nil end
  local delay = 0
  if job.retry_delays then
    local delays = cjson.decode(job.retry_delays)
    delay = delays[math.min(attempted + 1, #delays)]
  elseif job.retry_backoff then
    local b = cjson.decode(job.retry_backoff)
    delay = math.floor(math.min(b.base * b.factor ^ attempted, b.max))
  end
  return false, now + delay
end
