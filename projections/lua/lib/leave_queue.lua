-- leave_queue(id, job): take a queued job out of its queue (or its quota key's lane), and out of its
-- queue's waiting set
--- @include "projections/lua/lib/held_zrem.lua"
--- @include "projections/lua/lib/refresh_head.lua"
local function leave_queue(id, job)
  if job.quota_key then
    local lane = K.queue_lane(job.queue, job.quota_key)
    redis.call('ZREM', lane, id)
    if redis.call('DECR', K.queue_laned(job.queue)) <= 0 then redis.call('DEL', K.queue_laned(job.queue)) end
    if redis.call('EXISTS', lane) == 0 then redis.call('SREM', K.queue_lanes(job.queue), job.quota_key) end
    refresh_head(job.queue, job.quota_key)
  else
    held_zrem(K.queued_ids(job.queue), id)
  end
  held_zrem(K.queue_waiting(job.queue), id)
  if job.max_queued_time then held_zrem(K.due_queued, id) end
end
