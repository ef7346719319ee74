-- enter_stopped(id, job, status, ended, at, retry_at, fields): record a job that stopped running or
-- waiting: its status set, then either the expiry schedule (ended: its unique_key is free again, and
-- it no longer counts as pending for its launcher) or the retry schedule.  `fields` (field, value,
-- ...; optional): the caller's changes to the job hash, written in the same HSET
--- @include "projections/lua/lib/held_zadd.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/release_unique.lua"
--- @include "projections/lua/lib/track_pending.lua"
local function enter_stopped(id, job, status, ended, at, retry_at, fields)
  fields = fields or {}
  if HELD then
    held_zadd(K.queue_status(job.queue, status), id, id)
  else
    redis.call('ZADD', K.queue_status(job.queue, status), id, id)
  end
  if ended then
    redis.call('HSET', K.job(id), 'ended', '1', unpack(fields))
    release_unique(id, job)
    track_pending(id, job.launcher, false)
    local expires_after = (job.expires_after or 0) + 0  -- (not tonumber: one conversion, not two)
    if expires_after > 0 then
      if HELD then
        held_zadd(K.due_expire, at + expires_after, id)
      else
        redis.call('ZADD', K.due_expire, at + expires_after, id)
      end
    end
  else
    redis.call('HSET', K.job(id), 'retry_at', retry_at, unpack(fields))
    if HELD then held_zadd(K.due_retry, retry_at, id) else redis.call('ZADD', K.due_retry, retry_at, id) end
  end
end
