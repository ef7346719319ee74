-- refresh_head(queue, key): whether the lane of a quota key offers its head to fetch: it does
-- when the lane is not empty and the key runs fewer than max_running_per_key jobs (0: no limit)
local function refresh_head(queue, key)
  local head = redis.call('ZRANGE', K.queue_lane(queue, key), 0, 0, 'WITHSCORES')
  local limit = tonumber(redis.call('HGET', K.queue(queue), 'max_running_per_key') or 0)
  local running = tonumber(redis.call('HGET', K.queue_keys(queue), key) or 0)
  if head[1] and (limit == 0 or running < limit) then
    redis.call('ZADD', K.queue_heads(queue), head[2], key)
  else
    redis.call('ZREM', K.queue_heads(queue), key)
  end
end
