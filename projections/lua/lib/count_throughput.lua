-- count_throughput(queue, at, status): count a run that ended completed, failed or timed out in its
-- queue's bucket for the minute of `at` (the event's time, so replay counts the same); a bucket
-- still holding a minute an hour or more old starts again from zero.  Nothing else writes the
-- buckets, so the one this script wrote last is known without reading it again (THROUGHPUT: its
-- key, minute and counts), which saves a read per run when a batch ends runs of one queue in one
-- minute (a fold of the stream, a batch of completions).
-- (made with its four fields, so that setting them never grows it)
--- @each_call "THROUGHPUT"
local THROUGHPUT = {key = false, minute = false, completed = 0, failed = 0}
local function count_throughput(queue, at, status)
  local minute = math.floor(at / 60000)
  local key = K.queue_throughput(queue)
  local slot = minute % 60  -- a whole number: written as the field's name without a fraction
  local completed, failed = 0, 0
  local known = THROUGHPUT
  if known.key == key and known.minute == minute then
    completed, failed = known.completed, known.failed
  else
    local held = redis.call('HGET', key, slot)
    if held then
      local m, c, f = string.match(held, '^(%d+):(%d+):(%d+)$')
      if m + 0 == minute then completed, failed = c + 0, f + 0 end
    end
  end
  if status == 'completed' then completed = completed + 1 else failed = failed + 1 end
  redis.call('HSET', key, slot, string.format('%d:%d:%d', minute, completed, failed))
  known.key, known.minute, known.completed, known.failed = key, minute, completed, failed
end
