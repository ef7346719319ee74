-- update(now, id, status, output, attempt, progress, err): PATCH /job/{id} for one job: progress /
-- message, output, and a new status, checked against the transition table.  Progress, message and
-- output need a running job.  Every check comes before the first event, so a refused update appends
-- nothing.  Arguments as update_job's ARGV[2..7]; returns the number of events appended, or refuses
-- (NOT_FOUND, CONFLICT, BAD_REQUEST)
--
-- A resend by the attempt that made it answers as the first did and appends nothing (0 events):
-- an update naming attempt N and a status that ends a run (completed, failed, timed_out, cancelled)
-- is a resend when the job's last attempt is N, its status is the one asked for and its output is
-- the one sent, if one is: attempt N ended exactly so.  A hand-back (queued) naming
-- attempt N is a resend when the job is queued and its last attempt is N: it is back in its queue,
-- as asked.  Once the job has moved on (a failed attempt retried, a cancelled job requeued, a next
-- attempt started, the job gone), the resend is refused like any update of an attempt that is over.
--- @include "ledger/lua/lib/check_attempt.lua"
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/refuse.lua"
--- @include "ledger/lua/lib/require_job.lua"
--- @include "ledger/lua/lib/require_status.lua"
--- @include "ledger/lua/lib/retry_decision.lua"
--- @include "ledger/lua/lib/transition.lua"

-- (the statuses that end a run compared in turn: a table of them would be built at every call)
local function resent(job, status, output, attempt)
  if attempt == '' or job.attempt ~= attempt or job.status ~= status then return false end
  if status == 'completed' or status == 'failed' or status == 'timed_out' or status == 'cancelled' then
    return output == '' or job.output == output
  end
  return status == 'queued'
end

local function update(now, id, status, output, attempt, progress, err)
  local job = require_job(id)
  if resent(job, status, output, attempt) then return 0 end
  check_attempt(id, job, attempt)
  local out = nil
  if output ~= '' then out = output end

  -- checks
  local allowed, action = nil, nil
  if status ~= '' then
    allowed, action = transition(status)
    if not allowed then refuse('BAD_REQUEST', "'" .. status .. "' is not a status") end
  end
  -- running -> queued: the worker holding the attempt hands the job back (check_attempt made sure
  -- a named attempt is the running one); without an attempt a running job is not requeued
  local returning = status == 'queued' and attempt ~= ''
  if status ~= '' and not returning then require_status(id, job, allowed, action) end
  if progress ~= '' then
    require_status(id, job, RUNNING, 'report its progress (only a running job reports progress)')
  end
  if out then
    if status == 'queued' then refuse('CONFLICT', 'output goes with a running job, or the status that ends its run') end
    require_status(id, job, RUNNING, 'set its output (only a running job takes output)')
  end
  if status == 'queued' and redis.call('EXISTS', K.queue(job.queue)) == 0 then
    refuse('CONFLICT', 'job ' .. id .. " cannot be requeued: queue '" .. job.queue .. "' no longer exists")
  end

  -- events
  local appended = 0
  if progress ~= '' then
    emit(now, 'job_progressed', id, job.queue, progress)
    appended = appended + 1
  end
  if status == '' then
    if out then
      emit(now, 'job_output_set', id, job.queue, {output = out})
      appended = appended + 1
    end
  elseif status == 'completed' then
    -- without output the data is '{}' as it is, not a table made only to be encoded
    emit(now, 'job_completed', id, job.queue, out and {output = out} or '{}')
    appended = appended + 1
  elseif status == 'failed' or status == 'timed_out' then
    -- a client's timeout has the scheduler's effect: its retries apply, by the error's kind
    local e = {kind = 'error', message = ''}
    if status == 'timed_out' then e = {kind = 'timeout', message = 'timed out, as a client reported'} end
    if err ~= '' then e = cjson.decode(err) end
    local ended, retry_at = retry_decision(job, now, e.kind)
    local data = {ended = ended, retry_at = retry_at, output = out, error = e}
    if status == 'failed' then emit(now, 'job_failed', id, job.queue, data) else
      emit(now, 'job_timed_out', id, job.queue, data) end
    appended = appended + 1
  elseif status == 'cancelled' then
    emit(now, 'job_cancelled', id, job.queue, {output = out})
    appended = appended + 1
  elseif returning then
    emit(now, 'job_returned', id, job.queue, {attempt = tonumber(attempt), worker = job.worker})
    appended = appended + 1
  else
    emit(now, 'job_requeued', id, job.queue, {retry = false})
    appended = appended + 1
  end
  return appended
end
