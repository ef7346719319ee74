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
  local flat = redis.call('HGETALL', K.job(id))
  local n = #flat
  if n == 0 then return nil end
  -- a table that grows one field at a time is rebuilt at 1, 2, 4 and 8 fields: made at its size
  -- instead, by a constructor naming the first fields (nine: room for 16; five: room for 8)
  local from = 1
  if n >= 18 then
    job, from = {
      [flat[1]] = flat[2], [flat[3]] = flat[4], [flat[5]] = flat[6], [flat[7]] = flat[8],
      [flat[9]] = flat[10], [flat[11]] = flat[12], [flat[13]] = flat[14], [flat[15]] = flat[16],
      [flat[17]] = flat[18]}, 19
  elseif n >= 10 then
    job, from = {
      [flat[1]] = flat[2], [flat[3]] = flat[4], [flat[5]] = flat[6], [flat[7]] = flat[8],
      [flat[9]] = flat[10]}, 11
  else
    job = {}
  end
  for i = from, n, 2 do job[flat[i]] = flat[i + 1] end
  LOADED[id] = job
  return job
end
