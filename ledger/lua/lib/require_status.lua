-- require_status(id, job, allowed, action): refuse with CONFLICT unless the job's status is one of
-- allowed (see status_allowed)
--- @include "ledger/lua/lib/refuse.lua"
--- @include "ledger/lua/lib/status_allowed.lua"
local function require_status(id, job, allowed, action)
  if status_allowed(job, allowed) then return end
  local s = job.status
  local state = s
  if job.ended == '1' and (s == 'failed' or s == 'timed_out') then state = s .. ' (ended)' end
  refuse('CONFLICT', 'job ' .. id .. ' is ' .. state .. '; cannot ' .. action)
end
