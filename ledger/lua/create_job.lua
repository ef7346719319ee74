-- create_job: a new job; settings the request leaves out come from the queue.  With a future run_at
-- (or a delay) it is scheduled until then; with a unique_key held by a live job of the queue, that
-- job's id is answered and nothing is created.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3] options JSON (only the fields given; durations in ms, run_at in ms since the epoch)
-- ARGV[4] input JSON text, '' for none   ARGV[5] launcher id, '' for none
-- returns {id, 1 created | 0 existing}; NOT_FOUND when there is no such queue
--- @include "ledger/lua/lib/new_job.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local id, created = new_job(tonumber(ARGV[1]), ARGV[2], require_queue(ARGV[2]), cjson.decode(ARGV[3]), ARGV[4], ARGV[5])
return {id, created and 1 or 0}
