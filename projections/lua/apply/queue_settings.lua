-- apply_queue_settings(e): replace the queue's settings with the event's (queue_created, queue_updated)
local function apply_queue_settings(e)
  local d = e.data
  local key = K.queue(e.queue)
  redis.call('DEL', key)
  redis.call('HSET', key, 'timeout', d.timeout, 'heartbeat_timeout', d.heartbeat_timeout,
    'expires_after', d.expires_after, 'retries', d.retries)
  if present(d.retry_delays) and #d.retry_delays > 0 then
    redis.call('HSET', key, 'retry_delays', cjson.encode(d.retry_delays))
  end
  redis.call('SADD', K.queues, e.queue)
end
