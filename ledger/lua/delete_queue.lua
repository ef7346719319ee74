-- delete_queue: delete a queue and the jobs still queued (quota lanes included) or scheduled on it (one job_deleted each,
-- so every job's history shows how it went); running, waiting and ended jobs stay.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- returns the number of queued jobs deleted; NOT_FOUND when there is no such queue
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local now, name = NOW, ARGV[2]
require_queue(name)
local ids = redis.call('ZRANGE', K.queued_ids(name), 0, -1)
for _, id in ipairs(redis.call('ZRANGE', K.queue_status(name, 'scheduled'), 0, -1)) do ids[#ids + 1] = id end
for _, key in ipairs(redis.call('SMEMBERS', K.queue_lanes(name))) do
  for _, id in ipairs(redis.call('ZRANGE', K.queue_lane(name, key), 0, -1)) do ids[#ids + 1] = id end
end
for _, id in ipairs(ids) do
  emit(now, 'job_deleted', id, name, {reason = 'queue_deleted'})
end
emit(now, 'queue_deleted', nil, name, '{}')
return #ids
