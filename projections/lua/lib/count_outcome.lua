-- count_outcome(queue, outcome): one more of the queue's lifetime count of `outcome` (a job created,
-- started, completed, failed, timed_out, cancelled, expired or returned).  The counts only grow, and
-- only appliers write them, so replay counts exactly what the live ledger did.
--- @include "projections/lua/lib/held_hincrby.lua"
--- @include "projections/lua/lib/hold_writes.lua"
local function count_outcome(queue, outcome)
  if HELD then
    held_hincrby(K.queue_totals(queue), outcome, 1)
  else
    redis.call('HINCRBY', K.queue_totals(queue), outcome, 1)
  end
end
