-- job_defaults(name): the settings of queue `name` that a new job takes when it leaves them out (the
-- only ones new_job.lua reads), in one HMGET rather than the whole hash; those the queue does not
-- have are false.  nil when there is no such queue (queue_created always writes `timeout`).
local function job_defaults(name)
  local v = redis.call('HMGET', K.queue(name), 'timeout', 'heartbeat_timeout', 'expires_after', 'retries',
    'priority', 'max_queued_time', 'retry_delays', 'retry_on', 'no_retry_on', 'retry_backoff')
  if not v[1] then return nil end
  return {timeout = v[1], heartbeat_timeout = v[2], expires_after = v[3], retries = v[4], priority = v[5],
    max_queued_time = v[6], retry_delays = v[7], retry_on = v[8], no_retry_on = v[9], retry_backoff = v[10]}
end
