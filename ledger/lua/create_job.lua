-- create_job: a new job; settings the request leaves out come from the queue.  With a future run_at
-- (or a delay) it is scheduled until then; with a unique_key held by a live job of the queue, that
-- job's id is answered and nothing is created.  With an Idempotency-Key already recorded for the
-- same request, its first answer is given again and nothing is created (another request: MISMATCH).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3] options JSON (only the fields given; durations in ms, run_at in ms since the epoch)
-- ARGV[4] input JSON text, '' for none   ARGV[5] launcher id, '' for none
-- ARGV[6] Idempotency-Key, '' for none   ARGV[7] request hash   ARGV[8] the key's window (ms)
-- returns the new job's id when it was created (a plain integer: the usual answer, and the cheapest
-- to reply), else {id, 1 created | 0 existing, 1 when answered again from the key}; NOT_FOUND when
-- there is no such queue
--- @include "ledger/lua/lib/idempotency_fields.lua"
--- @include "ledger/lua/lib/new_job.lua"
--- @include "ledger/lua/lib/recorded_answer.lua"
--- @include "ledger/lua/lib/require_job_defaults.lua"
local now, name, key = NOW, ARGV[2], ARGV[6]  -- NOW: ARGV[1] as a number (the prelude's)
local answer = recorded_answer(key, ARGV[7])
if answer then return {answer, 1, 1} end
local extra = key ~= '' and idempotency_fields({}, now, key, ARGV[7], ARGV[8]) or nil
local options = ARGV[3] == '{}' and {} or cjson.decode(ARGV[3])  -- no options: the usual create
local id, created = new_job(now, name, require_job_defaults(name), options, ARGV[4], ARGV[5], extra)
if created then return id end
return {id, 0, 0}
