-- apply_job_created(e): a new job with its resolved settings, queued, or scheduled until run_at; its
-- hash written in one HSET.  A numeric setting at 0 is not stored (absent reads as 0), nor is it in
-- the event's data since new_job leaves zeros out (older events still carry them).  Job ids are
-- handed out in order by the command that appends job_created, so the ids of these events only
-- grow along the stream: job_id is simply the latest, and counts the jobs ever created (Ocypod's
-- total_jobs_created, which the readers take from it).  A job created with an Idempotency-Key records
-- the key (remember_request): the answer is the job's id, or the batch's ids the event names.  The
-- event is the first of the job's history, written inline with the rest of the hash.
--- @include "projections/lua/lib/enter_queue.lua"
--- @include "projections/lua/lib/present.lua"
--- @include "projections/lua/lib/remember_request.lua"
--- @include "projections/lua/lib/set_fields.lua"
--- @include "projections/lua/lib/track_pending.lua"
local function apply_job_created(e)
  local d, id = e.data, e.job
  redis.call('SET', K.job_id, id)
  local key = K.job(id)
  local scheduled = present(d.run_at)
  local fields = {'queue', e.queue, 'created_at', e.at, 'status', scheduled and 'scheduled' or 'queued',
    'h', e.id}
  local set, null = {}, cjson.null  -- the numeric settings above 0, stored
  for _, name in ipairs({'timeout', 'heartbeat_timeout', 'expires_after', 'retries', 'priority',
      'max_queued_time'}) do
    local v = d[name]
    if v ~= nil and v ~= null and v > 0 then  -- present(v), spelled out: this runs for every job
      fields[#fields + 1] = name; fields[#fields + 1] = v; set[name] = v
    end
  end
  set_fields(key, d, {'retry_delays', 'retry_backoff', 'tags', 'input', 'unique_key', 'quota_key',
    'retry_on', 'no_retry_on', 'launcher', 'run_at'}, fields)
  if present(d.tags) then
    for _, tag in ipairs(d.tags) do redis.call('SADD', K.tag(tag), id) end
  end
  if present(d.unique_key) then redis.call('HSET', K.queue_unique(e.queue), d.unique_key, id) end
  track_pending(id, d.launcher, true)
  if scheduled then
    redis.call('ZADD', K.queue_status(e.queue, 'scheduled'), id, id)
    redis.call('ZADD', K.due_release, d.run_at, id)
  else
    local quota_key = present(d.quota_key) and d.quota_key or nil
    local job = {queue = e.queue, priority = set.priority, quota_key = quota_key,
      max_queued_time = set.max_queued_time}
    enter_queue(id, job, e.at, true)
  end
  remember_request(e, present(d.idempotency_answer) and d.idempotency_answer or tonumber(id))
  return true
end
