-- require_job(id): the job's fields, or a NOT_FOUND refusal
--- @include "projections/lua/lib/load_job.lua"
--- @include "ledger/lua/lib/refuse.lua"
local function require_job(id)
  local job = load_job(id)
  if not job then refuse('NOT_FOUND', 'job ' .. id .. ' does not exist') end
  return job
end
