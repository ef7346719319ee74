-- apply_job_created(e): a new job with its resolved settings, queued, or scheduled until run_at; its
-- hash written in one HSET.  A numeric setting at 0 is not stored (absent reads as 0), nor is it in
-- the event's data since new_job leaves zeros out (older events still carry them).  Job ids are
-- handed out in order by the command that appends job_created, so the ids of these events only
-- grow along the stream: job_id is simply the latest, and counts the jobs ever created (Ocypod's
-- total_jobs_created, which the readers take from it).  A job created with an Idempotency-Key records
-- the key (remember_request): the answer is the job's id, or the batch's ids the event names.  The
-- event is the first of the job's history, written inline with the rest of the hash.  The blobs its
-- files name are counted (count_blob_refs), in all and for its queue, while the job stays; the
-- job in its queue's lifetime totals (count_outcome).
--- @include "projections/lua/lib/count_blob_refs.lua"
--- @include "projections/lua/lib/count_outcome.lua"
--- @include "projections/lua/lib/enter_queue.lua"
--- @include "projections/lua/lib/held_set.lua"
--- @include "projections/lua/lib/held_zadd.lua"
--- @include "projections/lua/lib/hold_writes.lua"
--- @include "projections/lua/lib/job_numbers.lua"
--- @include "projections/lua/lib/present.lua"
--- @include "projections/lua/lib/remember_request.lua"
--- @include "projections/lua/lib/set_fields.lua"
--- @include "projections/lua/lib/track_pending.lua"
-- the fields a job's hash copies from the event besides its numeric settings (JOB_NUMBERS; numeric for
-- loops over them: ipairs costs a call per field), generated from the event's model
local JOB_CREATED_FIELDS = --[[ @names "job_recorded" ]] {}
local function apply_job_created(e)
  local d, id, null = e.data, e.job, cjson.null
  if HELD then held_set(K.job_id, id) else redis.call('SET', K.job_id, id) end
  local key = K.job(id)
  -- present(v) spelled out below (v ~= nil and v ~= null): this runs for every job, most of these absent
  local scheduled = d.run_at ~= nil and d.run_at ~= null
  local fields = {'queue', e.queue, 'created_at', e.at, 'status', scheduled and 'scheduled' or 'queued',
    'h', e.id}
  for i = 1, #JOB_NUMBERS do
    local name = JOB_NUMBERS[i]
    local v = d[name]
    if v ~= nil and v ~= null and v > 0 then
      fields[#fields + 1] = name; fields[#fields + 1] = v
    end
  end
  set_fields(key, d, JOB_CREATED_FIELDS, fields)
  if d.files ~= nil and d.files ~= null then count_blob_refs(d.files, 1, e.queue) end
  if d.tags ~= nil and d.tags ~= null then
    for _, tag in ipairs(d.tags) do redis.call('SADD', K.tag(tag), id) end
  end
  if d.unique_key ~= nil and d.unique_key ~= null then redis.call('HSET', K.queue_unique(e.queue), d.unique_key, id) end
  if d.launcher ~= nil then track_pending(id, d.launcher, true) end
  if scheduled then
    if HELD then
      held_zadd(K.queue_status(e.queue, 'scheduled'), id, id)
    else
      redis.call('ZADD', K.queue_status(e.queue, 'scheduled'), id, id)
    end
    if HELD then
      held_zadd(K.due_release, d.run_at, id)
    else
      redis.call('ZADD', K.due_release, d.run_at, id)
    end
  else
    -- the settings enter_queue reads, as stored above (a priority of 0 orders as none does)
    local priority, wait = d.priority, d.max_queued_time
    local job = {queue = e.queue, quota_key = d.quota_key ~= null and d.quota_key or nil,
      priority = priority ~= null and priority or nil,
      max_queued_time = wait ~= nil and wait ~= null and wait > 0 and wait or nil}
    enter_queue(id, job, e.at, true)
  end
  count_outcome(e.queue, 'created')
  if d.idempotency_key ~= nil then
    remember_request(e, present(d.idempotency_answer) and d.idempotency_answer or tonumber(id))
  end
  return true
end
