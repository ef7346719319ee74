-- update_and_fetch: a worker's finished jobs recorded and its next jobs handed out in one call:
-- update_jobs, then fetch_jobs, in that order (a job completed frees its place under max_running
-- and its quota before the fetch looks).  A fetch refused (no such queue) is answered as its text
-- beside the updates, which stand.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name   ARGV[3] count   ARGV[4] worker id, '' for none
-- ARGV[5..] six values per update, as update_job's ARGV[2..7]
-- returns one flat list: per update its outcome as update_jobs answers, then the jobs started as
-- fetch_jobs answers (six values each) or the fetch's refusal as its text (one value)
--- @include "ledger/lua/lib/start_jobs.lua"
--- @include "ledger/lua/lib/update_each.lua"
local now = NOW
local outcomes = update_each(now, ARGV, 5)
-- (the jobs go after the outcomes, in the same list: start_jobs refuses before it adds any)
local ok, failure = pcall(start_jobs, now, ARGV[2], tonumber(ARGV[3]), ARGV[4], outcomes)
if not ok then
  local text = refused(failure)
  if not text then error(failure, 0) end  -- a fault, not a refusal
  outcomes[#outcomes + 1] = text
end
return outcomes
