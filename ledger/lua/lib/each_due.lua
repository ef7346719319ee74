-- each_due(key, now, limit, handle): the scheduler's pass over a deadline set: up to limit members
-- whose time has come, oldest first; handle(id, job) acts on each that is still a job (load_job).
-- Returns the ids handled, as numbers.
--- @include "projections/lua/lib/load_job.lua"
local function each_due(key, now, limit, handle)
  local done = {}
  for _, id in ipairs(redis.call('ZRANGE', key, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)) do
    local job = load_job(id)
    if job then
      handle(id, job)
      done[#done + 1] = tonumber(id)
    end
  end
  return done
end
