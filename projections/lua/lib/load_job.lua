-- load_job(id): the job's stored fields as a table, or nil when there is no such job.  What a
-- command reads is reused by the apply() of the event it emits next (a fetch reads the job, then
-- job_started reads it again): LOADED keeps the tables read since the last event was applied, and
-- apply() empties it after every event, since applying one may change any job.  Nothing else
-- writes projections, so a table in LOADED is always what HGETALL would answer.
local LOADED = {}
local function load_job(id)
  local job = LOADED[id]
  if job then return job end
  local flat = redis.call('HGETALL', K.job(id))
  if #flat == 0 then return nil end
  job = {}
  for i = 1, #flat, 2 do job[flat[i]] = flat[i + 1] end
  LOADED[id] = job
  return job
end
