-- require_queue(name): the queue's settings as a table (load_queue), or a NOT_FOUND refusal
local function require_queue(name)
  local settings = load_queue(name)
  if not settings then refuse('NOT_FOUND', "queue '" .. name .. "' does not exist") end
  return settings
end
