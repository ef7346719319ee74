-- require_queue(name): the queue's settings as a table, or a NOT_FOUND refusal
local function require_queue(name)
  local flat = redis.call('HGETALL', K.queue(name))
  if #flat == 0 then refuse('NOT_FOUND', "queue '" .. name .. "' does not exist") end
  local settings = {}
  for i = 1, #flat, 2 do settings[flat[i]] = flat[i + 1] end
  return settings
end
