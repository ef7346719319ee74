-- apply_queue_created(e): replace the queue's settings with the event's (queue_created, queue_updated)
--- @applies "queue_updated"
--- @include "projections/lua/lib/refresh_head.lua"
--- @include "projections/lua/lib/set_fields.lua"
-- QUEUE_SETTINGS: every setting of a queue (generated from the model); the event carries each
-- number, so the hash holds them all (job_defaults.lua tells a queue by its first)
local QUEUE_SETTINGS = --[[ @names "queue_settings" ]] {}
local function apply_queue_created(e)
  local key = K.queue(e.queue)
  redis.call('DEL', key)
  set_fields(key, e.data, QUEUE_SETTINGS)
  redis.call('SADD', K.queues, e.queue)
  for _, quota_key in ipairs(redis.call('SMEMBERS', K.queue_lanes(e.queue))) do refresh_head(e.queue, quota_key) end
end
