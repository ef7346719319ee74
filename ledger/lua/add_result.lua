-- add_result: the running attempt of a job stores a result, a reference to a blob the store already
-- holds, under its name (job_result_added); one of the same name is replaced in the job's record.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] job id   ARGV[3] attempt the caller acts for ('' none)
-- ARGV[4] the result: JSON {name, sha256, size, media_type}   ARGV[5] most results a job may hold
-- returns the attempt that added it; NOT_FOUND, CONFLICT when the job (or that attempt) is not
-- running or it holds as many results as it may
--- @include "ledger/lua/lib/check_attempt.lua"
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/refuse.lua"
--- @include "ledger/lua/lib/require_job.lua"
--- @include "ledger/lua/lib/require_status.lua"
local now, id, attempt = NOW, ARGV[2], ARGV[3]
local job = require_job(id)
check_attempt(id, job, attempt)
require_status(id, job, {running = true}, 'add a result (only the attempt running it can)')
local result = cjson.decode(ARGV[4])
if job.results then
  local results, replaces = cjson.decode(job.results), false
  for _, r in ipairs(results) do
    if r.name == result.name then replaces = true end
  end
  if not replaces and #results >= tonumber(ARGV[5]) then
    refuse('CONFLICT', 'job ' .. id .. ' holds ' .. #results .. ' results, as many as a job may')
  end
end
result.attempt = tonumber(job.attempt)
emit(now, 'job_result_added', id, job.queue, result)
return result.attempt
