-- status_allowed(job, allowed): whether the job's status is one of allowed (a table: status ->
-- true, or 'waiting' to admit a failed / timed_out job only while it waits to retry, not once it
-- has ended)
local function status_allowed(job, allowed)
  local rule = allowed[job.status]
  return rule == true or (rule == 'waiting' and job.ended ~= '1')
end
