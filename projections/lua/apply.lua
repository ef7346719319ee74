-- apply(id, kind, at, job, queue, data): apply one event of the ledger to the projections.
-- The one piece of code that changes projections: every live command calls it right after its
-- XADD, and replay calls it for each event read back from the stream.  Deterministic: it reads only
-- the event and the projections, never the clock.  A test checks that every event type is here.
local APPLY = {
  queue_created = apply_queue_settings,
  queue_updated = apply_queue_settings,
  queue_deleted = apply_queue_deleted,
  job_created = apply_job_created,
  job_started = apply_job_started,
  job_heartbeat = apply_job_heartbeat,
  job_output_set = apply_job_output_set,
  job_completed = apply_job_completed,
  job_failed = apply_job_failed,
  job_timed_out = apply_job_timed_out,
  job_cancelled = apply_job_cancelled,
  job_requeued = apply_job_requeued,
  job_ended = apply_job_ended,
  job_expired = apply_job_removed,
  job_deleted = apply_job_removed,
}

local function apply(id, kind, at, job, queue, data)
  APPLY[kind]({id = id, type = kind, at = tonumber(at), job = job, queue = queue, data = cjson.decode(data)})
  if job ~= '' then redis.call('RPUSH', K.history(job), id) end
end
