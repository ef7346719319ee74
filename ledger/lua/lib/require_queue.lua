-- require_queue(name): the queue's settings as a table (load_queue), or a NOT_FOUND refusal
--- @include "ledger/lua/lib/load_queue.lua"
--- @include "ledger/lua/lib/refuse.lua"
local function require_queue(name)
  local settings = load_queue(name)
  if not settings then refuse('NOT_FOUND', "queue '" .. name .. "' does not exist") end
  return settings
end
