-- update_job: PATCH /job/{id}: progress / message, output, and a new status, checked against the
-- transition table.  Progress, message and output need a running job.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] job id   ARGV[3] status ('' none: completed, failed, cancelled, queued)
-- ARGV[4] output JSON text ('' none)   ARGV[5] attempt the caller acts for ('' none)
-- ARGV[6] {progress, message} JSON ('' none)   ARGV[7] error {kind, message} JSON ('' none)
-- returns the number of events appended; NOT_FOUND, CONFLICT
local now, id, status, output, attempt = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local progress, err = ARGV[6], ARGV[7]
local job = require_job(id)
check_attempt(id, job, attempt)
local out = nil
if output ~= '' then out = output end
local RUNNING = {running = true}
local appended = 0

if progress ~= '' then
  require_status(id, job, RUNNING, 'report its progress (only a running job reports progress)')
  emit(now, 'job_progressed', id, job.queue, progress)
  appended = 1
end
if out and status ~= 'completed' and status ~= 'failed' and status ~= 'cancelled' then
  if status ~= '' then refuse('CONFLICT', 'output goes with a running job, or the status that ends its run') end
  require_status(id, job, RUNNING, 'set its output (only a running job takes output)')
  emit(now, 'job_output_set', id, job.queue, {output = out})
  return appended + 1
end
if status == '' then return appended end

if status == 'completed' then
  require_status(id, job, RUNNING, 'complete it')
  emit(now, 'job_completed', id, job.queue, {output = out})
elseif status == 'failed' then
  require_status(id, job, RUNNING, 'fail it')
  local e = {kind = 'error', message = ''}
  if err ~= '' then e = cjson.decode(err) end
  local ended, retry_at = retry_decision(job, now, e.kind)
  emit(now, 'job_failed', id, job.queue, {ended = ended, retry_at = retry_at, output = out, error = e})
elseif status == 'cancelled' then
  require_status(id, job, {running = true, queued = true, scheduled = true, waiting = true}, 'cancel it')
  if out then require_status(id, job, RUNNING, 'set its output (only a running job takes output)') end
  emit(now, 'job_cancelled', id, job.queue, {output = out})
elseif status == 'queued' then
  require_status(id, job, {cancelled = true, failed = true, timed_out = true}, 'requeue it')
  if redis.call('EXISTS', K.queue(job.queue)) == 0 then
    refuse('CONFLICT', 'job ' .. id .. " cannot be requeued: queue '" .. job.queue .. "' no longer exists")
  end
  emit(now, 'job_requeued', id, job.queue, {retry = false})
else
  refuse('BAD_REQUEST', "status '" .. status .. "' cannot be set by a client")
end
return appended + 1
