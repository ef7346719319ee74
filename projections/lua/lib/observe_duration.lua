-- observe_duration(queue, histogram, ms): count a duration (ms, from two events' `at`s: replay
-- observes the same) in the queue's `histogram` ('wait' or 'run'): one more in the first bucket
-- whose bound it does not exceed, and ms more in its sum.  Every bucket counts its own durations
-- only; the reader makes them cumulative, as Prometheus shows them.
--- @include "projections/lua/lib/duration_buckets.lua"
--- @include "projections/lua/lib/held_hincrby.lua"
local function observe_duration(queue, histogram, ms)
  local bucket = 'inf'
  for i = 1, #DURATION_BUCKETS do
    if ms <= DURATION_BUCKETS[i] then bucket = DURATION_BUCKETS[i]; break end
  end
  local key = K.queue_totals(queue)
  held_hincrby(key, histogram .. ':' .. bucket, 1)
  held_hincrby(key, histogram .. ':sum', ms)
end
