-- enter_queue(id, job, at): put the job at the back of its priority in its queue (higher priority
-- first, then first in, first out: the score is (100 - priority) * 2^40 + a growing sequence
-- number), in its quota key's lane if it has one, and start its max_queued_time clock.  The queue's
-- waiting set holds it by `at`, the age of the oldest queued job.  Its status becomes queued, with
-- `at` as its queued_at (unless status_written: job_created wrote the status with its other fields,
-- and its created_at says when it joined)
--- @include "projections/lua/lib/held_incr.lua"
--- @include "projections/lua/lib/held_zadd.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/refresh_head.lua"
local function enter_queue(id, job, at, status_written)
  local seq = HELD and held_incr(K.seq) or redis.call('INCR', K.seq)
  local score = (100 - (job.priority or 0)) * 1099511627776 + seq  -- (text converted once)
  if not status_written then redis.call('HSET', K.job(id), 'status', 'queued', 'queued_at', at) end
  if HELD then
    held_zadd(K.queue_waiting(job.queue), at, id)
  else
    redis.call('ZADD', K.queue_waiting(job.queue), at, id)
  end
  if job.quota_key then
    redis.call('ZADD', K.queue_lane(job.queue, job.quota_key), score, id)
    redis.call('SADD', K.queue_lanes(job.queue), job.quota_key)
    redis.call('INCR', K.queue_laned(job.queue))
    refresh_head(job.queue, job.quota_key)
  else
    if HELD then
      held_zadd(K.queued_ids(job.queue), score, id)
    else
      redis.call('ZADD', K.queued_ids(job.queue), score, id)
    end
  end
  if job.max_queued_time then
    if HELD then
      held_zadd(K.due_queued, at + job.max_queued_time, id)
    else
      redis.call('ZADD', K.due_queued, at + job.max_queued_time, id)
    end
  end
end
