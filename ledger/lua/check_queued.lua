-- check_queued: the scheduler's queue-time check.  Every queued job that has waited longer than its
-- max_queued_time times out (error kind queued_timeout), then waits to retry or ends.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] most jobs to handle in this call
-- returns the ids timed out
--- @include "ledger/lua/lib/each_due.lua"
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/retry_decision.lua"
local now, limit = NOW, tonumber(ARGV[2])
return each_due(K.due_queued, now, limit, function(id, job)
  local e = {kind = 'queued_timeout', message = 'queued longer than max_queued_time'}
  local ended, retry_at = retry_decision(job, now, e.kind)
  emit(now, 'job_timed_out', id, job.queue, {error = e, ended = ended, retry_at = retry_at})
end)
