-- bulk_jobs: one batch of a bulk operation.  Each job named that still matches the operation's
-- filter and whose status takes the action is requeued, cancelled or deleted, exactly as its single
-- PATCH or DELETE would, its event carrying the operation's id; a job that moved meanwhile (gone,
-- no longer matching, or in a status the action does not take) is skipped, never forced.  Dry: the
-- jobs are counted and nothing is appended.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] action (requeue, cancel or delete)   ARGV[3] operation id ('' dry)
-- ARGV[4] filter JSON {queue, status, tag, error_kind, since, until} (times in ms)
-- ARGV[5] '1' for a dry run   ARGV[6..] job ids
-- returns {matched, done}: the jobs that match and take the action, and the events appended
--- @include "ledger/lua/lib/bulk_matches.lua"
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/status_allowed.lua"
--- @include "ledger/lua/lib/transition.lua"
--- @include "projections/lua/lib/load_job.lua"
local now, action, operation, dry = NOW, ARGV[2], ARGV[3], ARGV[5] == '1'
local filter = cjson.decode(ARGV[4])
local allowed = nil
if action == 'requeue' then allowed = transition('queued')
elseif action == 'cancel' then allowed = transition('cancelled')
elseif action ~= 'delete' then return redis.error_reply('BAD_REQUEST unknown action ' .. action) end

local matched, done = 0, 0
for i = 6, #ARGV do
  local id = ARGV[i]
  local job = load_job(id)
  if job and bulk_matches(id, job, filter) and (not allowed or status_allowed(job, allowed)) then
    matched = matched + 1
    -- a requeue needs its queue (as a single one does): without it the job is matched, not done
    local placed = action ~= 'requeue' or redis.call('EXISTS', K.queue(job.queue)) == 1
    if placed and not dry then
      if action == 'requeue' then
        emit(now, 'job_requeued', id, job.queue, {retry = false, operation = operation})
      elseif action == 'cancel' then
        emit(now, 'job_cancelled', id, job.queue, {operation = operation})
      else
        emit(now, 'job_deleted', id, job.queue, {operation = operation})
      end
      done = done + 1
    end
  end
end
return {matched, done}
