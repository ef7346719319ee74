-- new_job(now, name, queue, options, input, launcher, extra): create a job on queue `name` (its settings
-- `queue`, from job_defaults: a batch reads them once) from decoded options (settings left out come
-- from the queue; the retry policy, delays or backoff, comes whole from one or the other), input
-- JSON text ('' none) and launcher id ('' none: a job a launcher creates records `launcher:ID` as its actor).
-- With a future run_at (or a delay) it is scheduled until then.  With a unique_key held by a live
-- job of the queue, nothing is created.  Returns the id, and true when it was created.
-- extra (optional): more fields of the job_created data (an Idempotency-Key's, see idempotency_fields.lua).
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/handed_out.lua"
--- @include "projections/lua/lib/job_numbers.lua"
-- the settings a job takes besides its numeric ones (JOB_NUMBERS), by kind (numeric for loops over
-- them: ipairs costs a call per field), generated from the models: those a queue gives the default
-- of, and those it does not (but the input, run_at and launcher, worked out below)
local NEW_JOB_POLICIES = --[[ @names "job_policies" ]] {}
local NEW_JOB_OWN = --[[ @names "job_own" ]] {}
local function new_job(now, name, queue, options, input, launcher, extra)
  -- present(v) is spelled out throughout (v ~= nil and v ~= null): this runs for every job, and a
  -- call per field cost more than the rest of these loops
  local null = cjson.null
  local unique_key = options.unique_key
  if unique_key ~= nil and unique_key ~= null then
    local holder = redis.call('HGET', K.queue_unique(name), unique_key)
    if holder then return tonumber(holder), false end
  end
  local data = {}
  -- the resolved numeric settings; those at 0 (off, none) are left out of the event: absent is 0.
  -- (the queue's '0' not made a number)
  for i = 1, #JOB_NUMBERS do
    local field = JOB_NUMBERS[i]
    local v = options[field]
    if v == nil or v == null then
      local default = queue[field]
      if default and default ~= '0' then data[field] = default + 0 end  -- + 0: tonumber reads it twice
    elseif v ~= 0 then
      data[field] = v
    end
  end
  -- retry_delays and retry_backoff are one policy (the delays win when both are given): a job that
  -- names either takes its own policy whole, and the queue's only when it names neither
  local delays, backoff = options.retry_delays, options.retry_backoff
  local own_policy = (delays ~= nil and delays ~= null) or (backoff ~= nil and backoff ~= null)
  for i = 1, #NEW_JOB_POLICIES do
    local field = NEW_JOB_POLICIES[i]
    local v = options[field]
    if v == nil or v == null then
      local policy = field == 'retry_delays' or field == 'retry_backoff'
      if queue[field] and not (policy and own_policy) then v = cjson.decode(queue[field]) end
    end
    if v ~= nil and v ~= null and next(v) ~= nil then data[field] = v end
  end
  for i = 1, #NEW_JOB_OWN do
    local field = NEW_JOB_OWN[i]
    local v = options[field]
    if v ~= nil and v ~= null and v ~= '' and (type(v) ~= 'table' or #v > 0) then data[field] = v end
  end
  local run_at, delay = options.run_at, options.delay
  if delay ~= nil and delay ~= null then run_at = now + delay end
  if run_at ~= nil and run_at ~= null and run_at > now then data.run_at = run_at end
  if input ~= '' then data.input = input end
  if launcher ~= '' then data.launcher = launcher end
  if extra then
    for field, v in pairs(extra) do data[field] = v end
  end
  local last, step = handed_out(K.job_id)
  local id = last + step
  local actor = nil
  if launcher ~= '' then actor = 'launcher:' .. launcher end
  -- the event names the job by its id as text, as replay reads it back: the applier writes it into
  -- keys, where a number would be formatted (as a float, %.14g) at each
  emit(now, 'job_created', string.format('%d', id), name, data, actor)
  return id, true
end
