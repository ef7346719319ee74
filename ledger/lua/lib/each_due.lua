-- each_due(key, now, limit, handle, load): the scheduler's pass over a deadline set: up to limit
-- members whose time has come, oldest first; handle(member, found) acts on each that load(member)
-- still finds (load defaults to load_job: the members are job ids).
-- Returns the members handled, job ids as numbers.
--- @include "projections/lua/lib/load_job.lua"
local function each_due(key, now, limit, handle, load)
  load = load or load_job
  local done = {}
  for _, id in ipairs(redis.call('ZRANGE', key, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)) do
    local found = load(id)
    if found then
      handle(id, found)
      done[#done + 1] = tonumber(id) or id
    end
  end
  return done
end
