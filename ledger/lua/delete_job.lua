-- delete_job: remove a job in any state (its history stays in the ledger).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] job id
-- returns 1; NOT_FOUND
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/require_job.lua"
local now, id = NOW, ARGV[2]
local job = require_job(id)
emit(now, 'job_deleted', id, job.queue, '{}')
return 1
