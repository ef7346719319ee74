-- transition(status): the statuses a job may take `status` from (see status_allowed for 'waiting'),
-- and what a refusal says the update cannot do; nil when `status` is not a status.  Each update
-- asks for one status: a table of every rule, built at every call, cost more than the update's
-- own checks.  RUNNING: the rule of what only a running job does
local RUNNING = {running = true}

local function transition(status)
  if status == 'completed' then return RUNNING, 'complete it (only a running job completes)' end
  if status == 'failed' then return RUNNING, 'fail it (only a running job fails)' end
  if status == 'timed_out' then return RUNNING, 'time it out (only a running job times out)' end
  if status == 'cancelled' then
    return {running = true, queued = true, scheduled = true, failed = true, timed_out = 'waiting'}, 'cancel it'
  end
  if status == 'queued' then
    return {cancelled = true, failed = true, timed_out = true},
      'requeue it (only a cancelled, failed or timed-out job is requeued)'
  end
  if status == 'running' then return {}, "set it running (only a worker's fetch starts a job)" end
  if status == 'scheduled' then return {}, 'schedule it (only a job created with run_at or delay is scheduled)' end
  return nil
end
