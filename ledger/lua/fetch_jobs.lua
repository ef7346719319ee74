-- fetch_jobs: hand out up to count queued jobs of a queue (ledger/lua/lib/start_jobs.lua).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name   ARGV[3] count   ARGV[4] worker id, '' for none
-- returns six values per job, one flat list: id, attempt, input JSON text or false,
-- heartbeat_timeout ms, files JSON text or false, traceparent or false; NOT_FOUND when there is no such queue
--- @include "ledger/lua/lib/start_jobs.lua"
return start_jobs(NOW, ARGV[2], tonumber(ARGV[3]), ARGV[4], {})
