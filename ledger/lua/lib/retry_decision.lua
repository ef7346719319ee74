-- retry_decision(job, now): whether a run that just stopped ends the job, and if not when it is
-- retried: now + retry_delays[retries_attempted + 1], the last delay repeating, 0 without delays
local function retry_decision(job, now)
  local attempted = tonumber(job.retries_attempted or 0)
  if attempted >= tonumber(job.retries or 0) then return true, nil end
  local delay = 0
  if job.retry_delays then
    local delays = cjson.decode(job.retry_delays)
    delay = delays[math.min(attempted + 1, #delays)]
  end
  return false, now + delay
end
