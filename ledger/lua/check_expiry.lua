-- check_expiry: the scheduler's expiry check.  Every ended job whose expires_after has passed since
-- it ended leaves the projections (its events stay in the ledger).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] most jobs to handle in this call
-- returns the ids expired
--- @include "ledger/lua/lib/each_due.lua"
--- @include "ledger/lua/lib/emit.lua"
local now, limit = NOW, tonumber(ARGV[2])
return each_due(K.due_expire, now, limit, function(id, job)
  emit(now, 'job_expired', id, job.queue, '{}')
end)
