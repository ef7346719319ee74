-- require_job_defaults(name): the queue's settings a new job takes (job_defaults), or a NOT_FOUND
-- refusal when there is no such queue
--- @include "ledger/lua/lib/job_defaults.lua"
--- @include "ledger/lua/lib/refuse.lua"
local function require_job_defaults(name)
  local defaults = job_defaults(name)
  if not defaults then refuse('NOT_FOUND', "queue '" .. name .. "' does not exist") end
  return defaults
end
