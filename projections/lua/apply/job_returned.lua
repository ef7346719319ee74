-- apply_job_returned(e): the worker running the job handed it back unfinished: it leaves running for
-- its queue, at the back of its priority, without counting a retry.  Like a requeue it clears what
-- the run left in the hash (start, heartbeat, output); its attempt stays, so the next fetch starts
-- the next one and the handed-back attempt is fenced off.  Counted in its queue's totals
--- @include "projections/lua/lib/count_outcome.lua"
--- @include "projections/lua/lib/enter_queue.lua"
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/load_job.lua"
local function apply_job_returned(e)
  local id = e.job
  local job = load_job(id)
  leave_place(id, job)
  redis.call('HDEL', K.job(id), 'started_at', 'last_heartbeat', 'output')
  enter_queue(id, job, e.at)
  count_outcome(job.queue, 'returned')
end
