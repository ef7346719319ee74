-- apply_queue_created(e): replace the queue's settings with the event's (queue_created, queue_updated)
--- @applies "queue_updated"
--- @include "projections/lua/lib/refresh_head.lua"
--- @include "projections/lua/lib/set_fields.lua"
local function apply_queue_created(e)
  local key = K.queue(e.queue)
  redis.call('DEL', key)
  redis.call('HSET', key, 'timeout', e.data.timeout, 'heartbeat_timeout', e.data.heartbeat_timeout,
    'expires_after', e.data.expires_after, 'retries', e.data.retries)
  set_fields(key, e.data, {'retry_delays', 'retry_backoff', 'priority', 'max_queued_time', 'max_running',
    'max_running_per_key', 'retry_on', 'no_retry_on', 'paused', 'max_file_size', 'max_job_bytes'})
  redis.call('SADD', K.queues, e.queue)
  for _, quota_key in ipairs(redis.call('SMEMBERS', K.queue_lanes(e.queue))) do refresh_head(e.queue, quota_key) end
end
