-- check_releases: the scheduler's release check.  Every scheduled job whose run_at has come joins
-- its queue.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] most jobs to handle in this call
-- returns the ids released
--- @include "ledger/lua/lib/due.lua"
--- @include "ledger/lua/lib/emit.lua"
--- @include "projections/lua/lib/load_job.lua"
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local done = {}
for _, id in ipairs(due(K.due_release, now, limit)) do
  local job = load_job(id)
  if job then
    emit(now, 'job_released', id, job.queue, '{}')
    done[#done + 1] = tonumber(id)
  end
end
return done
