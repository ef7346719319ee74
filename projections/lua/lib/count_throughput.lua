-- count_throughput(queue, at, status): count a run that ended completed, failed or timed out in its
-- queue's bucket for the minute of `at` (the event's time, so replay counts the same); a bucket
-- still holding a minute an hour or more old starts again from zero.  Nothing else writes the
-- buckets, so the one this script wrote last is known without reading it again (THROUGHPUT: its
-- key, minute and counts), which saves a read per run when a batch ends runs of one queue in one
-- minute (a fold of the stream, a batch of completions).  While replay holds its writes (see
-- hold_writes.lua) the known bucket is written only when another one takes its place, and at the
-- flush (`held`: not written yet; `hooked`: the flush will look).
-- (made with its six fields, so that setting them never grows it)
--- @each_call "THROUGHPUT"
--- @include "projections/lua/lib/hold_writes.lua"
local THROUGHPUT = {key = false, minute = false, completed = 0, failed = 0, held = false, hooked = false}
local function write_throughput()
  local known = THROUGHPUT
  if not known.held then return end
  known.held = false
  redis.call('HSET', known.key, known.minute % 60,
    string.format('%d:%d:%d', known.minute, known.completed, known.failed))
end
local function count_throughput(queue, at, status)
  local minute = math.floor(at / 60000)
  local key = K.queue_throughput(queue)
  local slot = minute % 60  -- a whole number: written as the field's name without a fraction
  local completed, failed = 0, 0
  local known = THROUGHPUT
  if known.key == key and known.minute == minute then
    completed, failed = known.completed, known.failed
  else
    write_throughput()
    local held = redis.call('HGET', key, slot)
    if held then
      local m, c, f = string.match(held, '^(%d+):(%d+):(%d+)$')
      if m + 0 == minute then completed, failed = c + 0, f + 0 end
    end
  end
  if status == 'completed' then completed = completed + 1 else failed = failed + 1 end
  known.key, known.minute, known.completed, known.failed = key, minute, completed, failed
  if not HELD then
    redis.call('HSET', key, slot, string.format('%d:%d:%d', minute, completed, failed))
    return
  end
  known.held = true
  if not known.hooked then
    known.hooked = true
    HELD.after[#HELD.after + 1] = write_throughput
  end
end
