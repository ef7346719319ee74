-- fetch_jobs: hand out up to count queued jobs, highest priority first, then oldest; each starts a
-- new attempt.  A paused queue hands out nothing.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name   ARGV[3] count   ARGV[4] worker id, '' for none
-- returns a list of {id, attempt, input JSON text or false}; NOT_FOUND when there is no such queue
local now, name, count, worker = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
local queue = require_queue(name)
if queue.paused then return {} end
local started = {}
for _ = 1, count do
  local head = redis.call('ZRANGE', K.queue_jobs(name), 0, 0)
  local id = head[1]
  if not id then break end
  local job = load_job(id)
  local attempt = tonumber(job.attempt or 0) + 1
  local data = {attempt = attempt}
  if worker ~= '' then data.worker = worker end
  emit(now, 'job_started', id, name, data)
  started[#started + 1] = {tonumber(id), attempt, job.input or false}
end
return started
