-- load_job(id): the job's stored fields as a table, or nil when there is no such job
local function load_job(id)
  local flat = redis.call('HGETALL', K.job(id))
  if #flat == 0 then return nil end
  local job = {}
  for i = 1, #flat, 2 do job[flat[i]] = flat[i + 1] end
  return job
end
