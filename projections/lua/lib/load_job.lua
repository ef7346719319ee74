-- load_job(id): the job's stored fields as a table, or nil when there is no such job.  What a
-- command reads is reused by the apply() of the event it emits next (a fetch reads the job, then
-- job_started reads it again): LOADED keeps the tables read since the last event was applied, and
-- apply() empties it after every event, since applying one may change any job.  Nothing else
-- writes projections, so a table in LOADED is always what HGETALL would answer.
--- @each_call "LOADED"
local LOADED = {}
local function load_job(id)
  local job = LOADED[id]
  if job then return job end
  -- read as a RESP3 map, which the server makes the table itself: no flat list of the fields and
  -- values, and no Lua loop over it
  redis.setresp(3)
  job = redis.call('HGETALL', K.job(id)).map
  redis.setresp(2)
  if next(job) == nil then return nil end
  LOADED[id] = job
  return job
end
