-- archived_history(job, last) and drop_archived_history(job, last): retention's last step for a job.
-- A job that is forgotten (its hash gone: expired or deleted) and whose every event is archived (the
-- newest id of its history list at or before LAST, the archive's end) keeps nothing in Redis: its
-- history list is deleted, and the archive's job index holds its event ids from then on.  The
-- archiver reads the lists to index (archived_history, script archive_forgotten), the archive trim
-- deletes them, replay deletes those of the archived events it applied (drop_archived_histories):
-- one rule, so a rebuild keeps exactly the history lists the live ledger keeps.
local function id_before_or_at(id, last)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  local last_ms, last_seq = string.match(last, '^(%d+)-(%d+)$')
  ms, seq, last_ms, last_seq = tonumber(ms), tonumber(seq), tonumber(last_ms), tonumber(last_seq)
  return ms < last_ms or (ms == last_ms and seq <= last_seq)
end

-- the job's history list when the rule removes it from Redis at LAST, else nil
local function archived_history(job, last)
  if redis.call('EXISTS', K.job(job)) == 1 then return nil end
  local newest = redis.call('LINDEX', K.history(job), -1)
  if not newest or not id_before_or_at(newest, last) then return nil end
  return redis.call('LRANGE', K.history(job), 0, -1)
end

-- whether it deleted the job's history list
local function drop_archived_history(job, last)
  if archived_history(job, last) == nil then return false end
  redis.call('DEL', K.history(job))
  return true
end
