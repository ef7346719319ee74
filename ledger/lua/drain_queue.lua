-- drain_queue: cancel up to a batch of the jobs waiting in a queue (queued, quota lanes included,
-- or scheduled), in the order they would have been handed out; running jobs are left to finish.
-- Each is one job_cancelled with reason queue_drained, so every job's history says how it went.
-- A caller drains a big queue batch after batch, so no call holds Redis long.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name   ARGV[3] the most jobs to cancel in this call
-- returns {cancelled, still waiting}; NOT_FOUND when there is no such queue
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local now, name, most = NOW, ARGV[2], tonumber(ARGV[3])
require_queue(name)
local ids = redis.call('ZRANGE', K.queued_ids(name), 0, most - 1)
for _, key in ipairs(redis.call('SMEMBERS', K.queue_lanes(name))) do
  if #ids >= most then break end
  for _, id in ipairs(redis.call('ZRANGE', K.queue_lane(name, key), 0, most - #ids - 1)) do ids[#ids + 1] = id end
end
if #ids < most then
  for _, id in ipairs(redis.call('ZRANGE', K.queue_status(name, 'scheduled'), 0, most - #ids - 1)) do
    ids[#ids + 1] = id
  end
end
for _, id in ipairs(ids) do
  emit(now, 'job_cancelled', id, name, {reason = 'queue_drained'})
end
local left = redis.call('ZCARD', K.queued_ids(name)) + redis.call('ZCARD', K.queue_status(name, 'scheduled'))
  + tonumber(redis.call('GET', K.queue_laned(name)) or '0')
return {#ids, left}
