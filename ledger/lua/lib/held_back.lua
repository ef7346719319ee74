-- held_back(id, launcher, queue): why launcher `id` cannot create a job now, or nil when it can:
-- 'queue_missing' (queue: its settings from job_defaults, nil when the queue is gone),
-- 'max_pending' (that many of its jobs have not ended; 0: no limit) or 'unique_key' (a live job of
-- the queue holds its template's unique_key).  Reads only; appends nothing.
local function held_back(id, launcher, queue)
  if not queue then return 'queue_missing' end
  local max_pending = tonumber(launcher.max_pending or 0)
  if max_pending > 0 and redis.call('SCARD', K.launcher_pending(id)) >= max_pending then
    return 'max_pending'
  end
  local unique_key = cjson.decode(launcher.template).unique_key
  if type(unique_key) == 'string' and redis.call('HEXISTS', K.queue_unique(launcher.queue), unique_key) == 1 then
    return 'unique_key'
  end
  return nil
end
