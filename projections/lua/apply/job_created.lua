-- apply_job_created(e): a new job with its resolved settings, queued, or scheduled until run_at
local function apply_job_created(e)
  local d, id = e.data, e.job
  if tonumber(id) > tonumber(redis.call('GET', K.job_id) or '0') then redis.call('SET', K.job_id, id) end
  local key = K.job(id)
  redis.call('HSET', key, 'queue', e.queue, 'created_at', e.at,
    'timeout', d.timeout, 'heartbeat_timeout', d.heartbeat_timeout,
    'expires_after', d.expires_after, 'retries', d.retries)
  set_fields(key, d, {'retry_delays', 'retry_backoff', 'tags', 'input', 'unique_key', 'quota_key',
    'retry_on', 'no_retry_on', 'launcher', 'run_at'})
  if present(d.priority) and d.priority > 0 then redis.call('HSET', key, 'priority', d.priority) end
  if present(d.max_queued_time) and d.max_queued_time > 0 then
    redis.call('HSET', key, 'max_queued_time', d.max_queued_time)
  end
  if present(d.tags) then
    for _, tag in ipairs(d.tags) do redis.call('SADD', K.tag(tag), id) end
  end
  if present(d.unique_key) then redis.call('HSET', K.queue_unique(e.queue), d.unique_key, id) end
  track_pending(id, d.launcher, true)
  if present(d.run_at) then
    redis.call('HSET', key, 'status', 'scheduled')
    redis.call('ZADD', K.queue_status(e.queue, 'scheduled'), id, id)
    redis.call('ZADD', K.due_release, d.run_at, id)
  else
    enter_queue(id, load_job(id), e.at)
  end
  redis.call('HINCRBY', K.stats, 'total_jobs_created', 1)
end
