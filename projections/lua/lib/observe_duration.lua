-- observe_duration(queue, histogram, ms): count a duration (ms, from two events' `at`s: replay
-- observes the same) in the queue's `histogram` ('wait' or 'run'): one more in the first bucket
-- whose bound it does not exceed, and ms more in its sum.  Every bucket counts its own durations
-- only; the reader makes them cumulative, as Prometheus shows them.
--- @include "projections/lua/lib/duration_buckets.lua"
--- @include "projections/lua/lib/held_hincrby.lua"
--- @include "projections/lua/lib/hold_writes.lua"
local function duration_fields(histogram)
  local fields = {inf = histogram .. ':inf', sum = histogram .. ':sum'}
  for i = 1, #DURATION_BUCKETS do fields[i] = histogram .. ':' .. DURATION_BUCKETS[i] end
  return fields
end
-- DURATION_FIELDS: histogram -> its fields' names ('wait:5', ... by bucket, then inf and sum), made
-- once: not a bound made text again at each observation
local DURATION_FIELDS = {wait = duration_fields('wait'), run = duration_fields('run')}
local function observe_duration(queue, histogram, ms)
  local fields = DURATION_FIELDS[histogram]
  local field = fields.inf
  for i = 1, #DURATION_BUCKETS do
    if ms <= DURATION_BUCKETS[i] then field = fields[i]; break end
  end
  local key = K.queue_totals(queue)
  if HELD then held_hincrby(key, field, 1) else redis.call('HINCRBY', key, field, 1) end
  if HELD then held_hincrby(key, fields.sum, ms) else redis.call('HINCRBY', key, fields.sum, ms) end
end
