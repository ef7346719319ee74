-- stop_run(e, status, ended, retry_at, stat): the shared step of completed, failed,
-- timed_out and cancelled: leave the current place, record the end of the run (and its error),
-- enter the next place, count the run in the queue's throughput, and the event in its lifetime
-- totals, with the run's time (started_at to now) when it was running.  Returns whether the event
-- went into the job's inline history with the rest
--- @include "projections/lua/lib/count_outcome.lua"
--- @include "projections/lua/lib/count_throughput.lua"
--- @include "projections/lua/lib/enter_stopped.lua"
--- @include "projections/lua/lib/held_hincrby.lua"
--- @include "projections/lua/lib/history_field.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/load_job.lua"
--- @include "projections/lua/lib/observe_duration.lua"
--- @include "projections/lua/lib/with_error.lua"
local function stop_run(e, status, ended, retry_at, stat)
  local id = e.job
  local job = load_job(id)
  local ran = job.status == 'running' and e.at - job.started_at
  leave_place(id, job)
  local fields, d, null = {'status', status, 'ended_at', e.at}, e.data, cjson.null
  -- present(v) spelled out (v ~= nil and v ~= null): every run's end passes here, a call costs more
  if d.output ~= nil and d.output ~= null then fields[#fields + 1] = 'output'; fields[#fields + 1] = d.output end
  if d.error ~= nil and d.error ~= null then
    fields[#fields + 1] = 'errors'; fields[#fields + 1] = with_error(job, e.at, d.error)
  end
  local recorded = history_field(job, e, fields)
  enter_stopped(id, job, status, ended, e.at, retry_at, fields)
  if HELD then held_hincrby(K.stats, stat, 1) else redis.call('HINCRBY', K.stats, stat, 1) end
  if status ~= 'cancelled' then count_throughput(job.queue, e.at, status) end
  count_outcome(job.queue, status)
  if ran then observe_duration(job.queue, 'run', ran) end
  return recorded
end
