-- check_attempt(id, job, attempt): fencing.  An update that names an attempt (non-empty) acts only
-- for the running attempt; anything else is refused with CONFLICT and changes nothing
--- @include "ledger/lua/lib/refuse.lua"
local function check_attempt(id, job, attempt)
  if attempt == '' then return end
  if job.status ~= 'running' or job.attempt ~= attempt then
    refuse('CONFLICT', 'attempt ' .. attempt .. ' of job ' .. id .. ' is not the running attempt')
  end
end
