-- require_status(id, job, allowed, action): refuse with CONFLICT unless the job's status is one of
-- allowed (a set table); 'waiting' in allowed admits failed / timed_out jobs that have not ended
local function require_status(id, job, allowed, action)
  local s = job.status
  if allowed[s] then return end
  if allowed.waiting and (s == 'failed' or s == 'timed_out') and job.ended ~= '1' then return end
  local state = s
  if job.ended == '1' and (s == 'failed' or s == 'timed_out') then state = s .. ' (ended)' end
  refuse('CONFLICT', 'job ' .. id .. ' is ' .. state .. '; cannot ' .. action)
end
