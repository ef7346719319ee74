-- check_retries: the scheduler's retry check.  Every failed or timed-out job whose retry time has
-- come goes back to its queue; if the queue was deleted meanwhile, the job ends as it is.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] most jobs to handle in this call
-- returns the ids requeued or ended
--- @include "ledger/lua/lib/each_due.lua"
--- @include "ledger/lua/lib/emit.lua"
local now, limit = NOW, tonumber(ARGV[2])
return each_due(K.due_retry, now, limit, function(id, job)
  if redis.call('EXISTS', K.queue(job.queue)) == 1 then
    emit(now, 'job_requeued', id, job.queue, {retry = true})
  else
    emit(now, 'job_ended', id, job.queue, {reason = 'queue_deleted'})
  end
end)
