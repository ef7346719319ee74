-- create_jobs: many jobs on one queue in one round trip, each exactly as create_job makes it.
-- With an Idempotency-Key already recorded for the same request, its first answer is given again
-- and nothing is created (another request: MISMATCH).  A new key is recorded in the first event the
-- batch appends, with every id the batch answers: those are known before the first job is made,
-- since ids are handed out in order and only a unique_key held (before or within the batch) makes
-- a job answer another's id.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3] Idempotency-Key, '' for none   ARGV[4] request hash   ARGV[5] the key's window (ms)
-- ARGV[6..] two values per job: options JSON, input JSON text ('' none)
-- returns a list of {id, 1 created | 0 existing, 0}, or {id, 1, 1} for each id of the first answer
-- when answered again from the key; NOT_FOUND when there is no such queue (and then nothing is created:
-- the queue is checked before the first job)
--- @include "ledger/lua/lib/idempotency_fields.lua"
--- @include "ledger/lua/lib/new_job.lua"
--- @include "ledger/lua/lib/recorded_answer.lua"
--- @include "ledger/lua/lib/require_job_defaults.lua"
--- @include "projections/lua/lib/present.lua"
local now, name, key = NOW, ARGV[2], ARGV[3]
local answer = recorded_answer(key, ARGV[4])
if answer then
  local again = {}
  for i, id in ipairs(answer) do again[i] = {id, 1, 1} end
  return again
end
local queue = require_job_defaults(name)  -- read once: creating jobs does not change a queue's settings
local jobs = {}
for i = 6, #ARGV, 2 do jobs[#jobs + 1] = {cjson.decode(ARGV[i]), ARGV[i + 1]} end

-- the ids the batch will answer, as new_job will hand them out
local function planned_ids()
  local next_id, step = handed_out(K.job_id)
  local taken, ids = {}, {}
  for i, job in ipairs(jobs) do
    local unique = job[1].unique_key
    local holder = nil
    if present(unique) then holder = taken[unique] or redis.call('HGET', K.queue_unique(name), unique) end
    if holder then
      ids[i] = tonumber(holder)
    else
      next_id = next_id + step
      ids[i] = next_id
      if present(unique) and unique ~= '' then taken[unique] = next_id end
    end
  end
  return ids
end

local extra = nil
if key ~= '' then extra = idempotency_fields({}, now, key, ARGV[4], ARGV[5], planned_ids()) end
local made = {}
for _, job in ipairs(jobs) do
  local id, created = new_job(now, name, queue, job[1], job[2], '', extra)
  if created then extra = nil end  -- the key goes in the first event only
  made[#made + 1] = {id, created and 1 or 0, 0}
end
return made
