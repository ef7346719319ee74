-- apply_job_created(e): a new queued job with its resolved settings
local function apply_job_created(e)
  local d, id = e.data, e.job
  if tonumber(id) > tonumber(redis.call('GET', K.job_id) or '0') then redis.call('SET', K.job_id, id) end
  local key = K.job(id)
  redis.call('HSET', key, 'queue', e.queue, 'status', 'queued', 'created_at', e.at,
    'timeout', d.timeout, 'heartbeat_timeout', d.heartbeat_timeout,
    'expires_after', d.expires_after, 'retries', d.retries)
  if present(d.retry_delays) and #d.retry_delays > 0 then
    redis.call('HSET', key, 'retry_delays', cjson.encode(d.retry_delays))
  end
  if present(d.tags) and #d.tags > 0 then
    redis.call('HSET', key, 'tags', cjson.encode(d.tags))
    for _, tag in ipairs(d.tags) do redis.call('SADD', K.tag(tag), id) end
  end
  if present(d.input) then redis.call('HSET', key, 'input', d.input) end
  enter_queue(id, {queue = e.queue})
  redis.call('HINCRBY', K.stats, 'total_jobs_created', 1)
end
