-- load_queue(name): the queue's settings as a table, or nil when there is no such queue
local function load_queue(name)
  local flat = redis.call('HGETALL', K.queue(name))
  if #flat == 0 then return nil end
  local settings = {}
  for i = 1, #flat, 2 do settings[flat[i]] = flat[i + 1] end
  return settings
end
