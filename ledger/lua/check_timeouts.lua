-- check_timeouts: the scheduler's timeout check.  Every running job whose timeout or heartbeat
-- deadline has passed times out (the cause recorded as an error of kind timeout or
-- heartbeat_timeout), then waits to retry or ends.  Reads only the due part of the deadline set,
-- so its cost follows the due work, not the number of running jobs.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] most jobs to handle in this call
-- returns the ids timed out
--- @include "ledger/lua/lib/each_due.lua"
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/retry_decision.lua"
local now, limit = NOW, tonumber(ARGV[2])
return each_due(K.due_run, now, limit, function(id, job)
  local timeout = tonumber(job.timeout or 0)
  local e = {kind = 'heartbeat_timeout', message = 'no heartbeat within heartbeat_timeout'}
  if timeout > 0 and tonumber(job.started_at) + timeout <= now then
    e = {kind = 'timeout', message = 'running longer than timeout'}
  end
  local ended, retry_at = retry_decision(job, now, e.kind)
  emit(now, 'job_timed_out', id, job.queue, {error = e, ended = ended, retry_at = retry_at})
end)
