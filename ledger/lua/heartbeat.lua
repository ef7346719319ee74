-- heartbeat: the worker running the job is alive.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] job id   ARGV[3] attempt the caller acts for ('' none)
-- returns 1; NOT_FOUND, CONFLICT when the job (or that attempt) is not running
--- @include "ledger/lua/lib/check_attempt.lua"
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/require_job.lua"
--- @include "ledger/lua/lib/require_status.lua"
local now, id, attempt = NOW, ARGV[2], ARGV[3]
local job = require_job(id)
check_attempt(id, job, attempt)
require_status(id, job, {running = true}, 'heartbeat it (only a running job takes heartbeats)')
emit(now, 'job_heartbeat', id, job.queue, '{}')
return 1
