-- leave_place(id, job): take the job out of the one place its current status puts it, and out of
-- the deadline set that status schedules it in
--- @include "projections/lua/lib/count_running_key.lua"
--- @include "projections/lua/lib/held_zrem.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/leave_queue.lua"
local function leave_place(id, job)
  local status = job.status
  if status == 'queued' then
    leave_queue(id, job)
  else
    if HELD then
      held_zrem(K.queue_status(job.queue, status), id)
    else
      redis.call('ZREM', K.queue_status(job.queue, status), id)
    end
  end
  if status == 'running' then
    if HELD then held_zrem(K.due_run, id) else redis.call('ZREM', K.due_run, id) end
    count_running_key(job, -1)
  elseif status == 'scheduled' then
    if HELD then held_zrem(K.due_release, id) else redis.call('ZREM', K.due_release, id) end
  elseif job.ended == '1' then
    if HELD then held_zrem(K.due_expire, id) else redis.call('ZREM', K.due_expire, id) end
  elseif status == 'failed' or status == 'timed_out' then
    if HELD then held_zrem(K.due_retry, id) else redis.call('ZREM', K.due_retry, id) end
    redis.call('HDEL', K.job(id), 'retry_at')
  end
end
