-- count_throughput(queue, at, status): count a run that ended completed, failed or timed out in its
-- queue's bucket for the minute of `at` (the event's time, so replay counts the same); a bucket
-- still holding a minute an hour or more old starts again from zero
local function count_throughput(queue, at, status)
  local minute = math.floor(at / 60000)
  local key = K.queue_throughput(queue)
  local slot = tostring(minute % 60)
  local held = redis.call('HGET', key, slot)
  local completed, failed = 0, 0
  if held then
    local m, c, f = string.match(held, '^(%d+):(%d+):(%d+)$')
    if tonumber(m) == minute then completed, failed = tonumber(c), tonumber(f) end
  end
  if status == 'completed' then completed = completed + 1 else failed = failed + 1 end
  redis.call('HSET', key, slot, string.format('%d:%d:%d', minute, completed, failed))
end
