-- update_and_fetch: a worker's finished jobs recorded and its next jobs handed out in one call:
-- update_jobs, then fetch_jobs, in that order (a job completed frees its place under max_running
-- and its quota before the fetch looks).  A fetch refused (no such queue) is answered as its text
-- beside the updates, which stand.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name   ARGV[3] count   ARGV[4] worker id, '' for none
-- ARGV[5..] six values per update, as update_job's ARGV[2..7]
-- returns {per update as update_jobs answers, the jobs as fetch_jobs answers or the refusal's text}
--- @include "ledger/lua/lib/start_jobs.lua"
--- @include "ledger/lua/lib/update_each.lua"
local now = tonumber(ARGV[1])
local outcomes = update_each(now, ARGV, 5)
local ok, started = pcall(start_jobs, now, ARGV[2], tonumber(ARGV[3]), ARGV[4])
if not ok then
  local text = refused(started)
  if not text then error(started, 0) end  -- a fault, not a refusal
  started = text
end
return {outcomes, started}
