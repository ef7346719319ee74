-- count_running_key(job, delta): one more (1) or one fewer (-1) running job of the job's quota key
--- @include "projections/lua/lib/refresh_head.lua"
local function count_running_key(job, delta)
  if not job.quota_key then return end
  local n = redis.call('HINCRBY', K.queue_keys(job.queue), job.quota_key, delta)
  if n <= 0 then redis.call('HDEL', K.queue_keys(job.queue), job.quota_key) end
  refresh_head(job.queue, job.quota_key)
end
