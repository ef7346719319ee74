-- apply_job_heartbeat(e): the worker is alive; the heartbeat deadline moves on
--- @include "projections/lua/lib/held_zadd.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/load_job.lua"
--- @include "projections/lua/lib/run_deadline.lua"
local function apply_job_heartbeat(e)
  local job = load_job(e.job)
  redis.call('HSET', K.job(e.job), 'last_heartbeat', e.at)
  local deadline = run_deadline(job, tonumber(job.started_at), e.at)
  if deadline then
    if HELD then held_zadd(K.due_run, deadline, e.job) else redis.call('ZADD', K.due_run, deadline, e.job) end
  end
end
