-- apply_queue_deleted(e): the queue and its settings are gone (its queued jobs went first, each by
-- its own job_deleted event); running and ended jobs of the queue stay
--- @include "projections/lua/lib/held_zdel.lua"
local function apply_queue_deleted(e)
  redis.call('DEL', K.queue(e.queue))
  held_zdel(K.queued_ids(e.queue))
  redis.call('SREM', K.queues, e.queue)
end
