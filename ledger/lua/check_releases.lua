-- check_releases: the scheduler's release check.  Every scheduled job whose run_at has come joins
-- its queue.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] most jobs to handle in this call
-- returns the ids released
--- @include "ledger/lua/lib/each_due.lua"
--- @include "ledger/lua/lib/emit.lua"
local now, limit = NOW, tonumber(ARGV[2])
return each_due(K.due_release, now, limit, function(id, job)
  emit(now, 'job_released', id, job.queue, '{}')
end)
