-- job_defaults(name): the settings of queue `name` that a new job takes when it leaves them out (the
-- only ones new_job.lua reads), in one HMGET rather than the whole hash; those the queue does not
-- have are false.  nil when there is no such queue (queue_created always writes the first, a number).
-- JOB_DEFAULTS: the job options a queue setting gives the default of (generated from the models)
local JOB_DEFAULTS = --[[ @names "job_defaults" ]] {}
local function job_defaults(name)
  local v = redis.call('HMGET', K.queue(name), unpack(JOB_DEFAULTS))
  if not v[1] then return nil end
  local defaults = {}
  for i = 1, #JOB_DEFAULTS do defaults[JOB_DEFAULTS[i]] = v[i] end
  return defaults
end
