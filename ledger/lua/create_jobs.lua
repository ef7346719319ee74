-- create_jobs: many jobs on one queue in one round trip, each exactly as create_job makes it.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3..] two values per job: options JSON, input JSON text ('' none)
-- returns a list of {id, 1 created | 0 existing}; NOT_FOUND when there is no such queue (and then
-- nothing is created: the queue is checked before the first job)
--- @include "ledger/lua/lib/new_job.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local now, name = tonumber(ARGV[1]), ARGV[2]
local queue = require_queue(name)  -- read once: creating jobs does not change a queue's settings
local made = {}
for i = 3, #ARGV, 2 do
  local id, created = new_job(now, name, queue, cjson.decode(ARGV[i]), ARGV[i + 1], '')
  made[#made + 1] = {id, created and 1 or 0}
end
return made
