-- fire_launcher_now: fire a launcher by hand, now, whatever its schedule (paused too): a job from its
-- template (job_created, by the launcher) and launcher_fired with `manual`, by the caller.  Its
-- schedule is left as it was.  A launcher held back (its queue gone, max_pending of its jobs not
-- ended, its unique_key held) is refused, and nothing is appended.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] launcher id
-- returns the new job's id; NOT_FOUND when there is no such launcher; CONFLICT when it is held back
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/held_back.lua"
--- @include "ledger/lua/lib/job_defaults.lua"
--- @include "ledger/lua/lib/load_launcher.lua"
--- @include "ledger/lua/lib/new_job.lua"
--- @include "ledger/lua/lib/refuse.lua"
local now, id = NOW, ARGV[2]
local launcher = load_launcher(id)
if not launcher then refuse('NOT_FOUND', 'launcher ' .. id .. ' does not exist') end
local queue = job_defaults(launcher.queue)
local why = {queue_missing = "its queue '" .. launcher.queue .. "' does not exist",
  max_pending = launcher.max_pending .. ' of its jobs (max_pending) have not ended',
  unique_key = 'a live job holds its unique_key'}
local reason = held_back(id, launcher, queue)
if reason then refuse('CONFLICT', 'launcher ' .. id .. ' cannot fire now: ' .. why[reason]) end
local job, created = new_job(now, launcher.queue, queue, cjson.decode(launcher.template), launcher.input or '', id)
if not created then refuse('CONFLICT', 'launcher ' .. id .. ' cannot fire now: ' .. why.unique_key) end
emit(now, 'launcher_fired', nil, launcher.queue,
  {launcher = tonumber(id), due_at = now, next_at = tonumber(launcher.next_at), job = job, manual = true})
return job
