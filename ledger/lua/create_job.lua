-- create_job: a new job; settings the request leaves out come from the queue.  With a future run_at
-- (or a delay) it is scheduled until then; with a unique_key held by a live job of the queue, that
-- job's id is answered and nothing is created.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3] options JSON (only the fields given; durations in ms, run_at in ms since the epoch)
-- ARGV[4] input JSON text, '' for none   ARGV[5] launcher id, '' for none
-- returns {id, 1 created | 0 existing}; NOT_FOUND when there is no such queue
local now, name, options, input, launcher = tonumber(ARGV[1]), ARGV[2], cjson.decode(ARGV[3]), ARGV[4], ARGV[5]
local queue = require_queue(name)
if present(options.unique_key) then
  local holder = redis.call('HGET', K.queue_unique(name), options.unique_key)
  if holder then return {tonumber(holder), 0} end
end
local data = {}
for _, field in ipairs({'timeout', 'heartbeat_timeout', 'expires_after', 'retries', 'priority', 'max_queued_time'}) do
  if present(options[field]) then data[field] = options[field] else data[field] = tonumber(queue[field] or 0) end
end
for _, field in ipairs({'retry_delays', 'retry_on', 'no_retry_on', 'retry_backoff'}) do
  local v = options[field]
  if not present(v) and queue[field] then v = cjson.decode(queue[field]) end
  if present(v) and next(v) ~= nil then data[field] = v end
end
for _, field in ipairs({'tags', 'unique_key', 'quota_key'}) do
  if present(options[field]) and options[field] ~= '' and (type(options[field]) ~= 'table' or #options[field] > 0) then
    data[field] = options[field]
  end
end
local run_at = options.run_at
if present(options.delay) then run_at = now + options.delay end
if present(run_at) and run_at > now then data.run_at = run_at end
if input ~= '' then data.input = input end
if launcher ~= '' then data.launcher = launcher end
local id = tonumber(redis.call('GET', K.job_id) or '0') + 1
emit(now, 'job_created', id, name, data)
return {id, 1}
