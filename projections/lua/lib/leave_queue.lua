-- leave_queue(id, job): take a queued job out of its queue (or its quota key's lane), and out of its
-- queue's waiting set
--- @include "projections/lua/lib/held_zrem.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/refresh_head.lua"
local function leave_queue(id, job)
  if job.quota_key then
    local lane = K.queue_lane(job.queue, job.quota_key)
    redis.call('ZREM', lane, id)
    if redis.call('DECR', K.queue_laned(job.queue)) <= 0 then redis.call('DEL', K.queue_laned(job.queue)) end
    if redis.call('EXISTS', lane) == 0 then redis.call('SREM', K.queue_lanes(job.queue), job.quota_key) end
    refresh_head(job.queue, job.quota_key)
  else
    if HELD then
      held_zrem(K.queued_ids(job.queue), id)
    else
      redis.call('ZREM', K.queued_ids(job.queue), id)
    end
  end
  if HELD then
    held_zrem(K.queue_waiting(job.queue), id)
  else
    redis.call('ZREM', K.queue_waiting(job.queue), id)
  end
  if job.max_queued_time then
    if HELD then held_zrem(K.due_queued, id) else redis.call('ZREM', K.due_queued, id) end
  end
end
