-- create_job: a new queued job; settings the request leaves out come from the queue.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3] options JSON (only the fields given: timeout, heartbeat_timeout, expires_after in ms,
--         retries, retry_delays in ms, tags)   ARGV[4] input JSON text, '' for none
-- returns the new job's id; NOT_FOUND when there is no such queue
local now, name, options, input = tonumber(ARGV[1]), ARGV[2], cjson.decode(ARGV[3]), ARGV[4]
local queue = require_queue(name)
local data = {}
for _, field in ipairs({'timeout', 'heartbeat_timeout', 'expires_after', 'retries'}) do
  if present(options[field]) then data[field] = options[field] else data[field] = tonumber(queue[field]) end
end
local delays = options.retry_delays
if not present(delays) then delays = queue.retry_delays and cjson.decode(queue.retry_delays) or {} end
if #delays > 0 then data.retry_delays = delays end
if present(options.tags) and #options.tags > 0 then data.tags = options.tags end
if input ~= '' then data.input = input end
local id = tonumber(redis.call('GET', K.job_id) or '0') + 1
emit(now, 'job_created', id, name, data)
return id
