-- require_status(id, job, allowed, action): refuse with CONFLICT unless the job's status is one of
-- allowed (a table: status -> true, or 'waiting' to admit a failed / timed_out job only while it
-- waits to retry, not once it has ended)
--- @include "ledger/lua/lib/refuse.lua"
local function require_status(id, job, allowed, action)
  local s = job.status
  local rule = allowed[s]
  if rule == true or (rule == 'waiting' and job.ended ~= '1') then return end
  local state = s
  if job.ended == '1' and (s == 'failed' or s == 'timed_out') then state = s .. ' (ended)' end
  refuse('CONFLICT', 'job ' .. id .. ' is ' .. state .. '; cannot ' .. action)
end
