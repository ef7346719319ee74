-- start_jobs(now, name, count, worker, started): hand out up to count queued jobs of queue name,
-- highest priority first, then oldest; each starts a new attempt (job_started).  A paused queue hands
-- out nothing; max_running caps the queue's running jobs.  Jobs with a quota_key wait in their key's
-- lane, and only lanes whose key is under max_running_per_key offer their head, so a fetch compares
-- two heads and never looks at the jobs held back.  worker: its id, '' for none.
-- Appends to `started` (a list, returned) six values per job started: id, attempt, input JSON text
-- or false, heartbeat_timeout in ms, files JSON text or false, traceparent or false; one flat list, not a list per job,
-- because each list in a script's answer costs the server a reply of its own.
-- Refuses NOT_FOUND, before it starts any job, when there is no such queue.  The jobs start at
-- start_time(now): a fetch held up in a stalled Redis starts them when it runs, not when it was sent.
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/start_time.lua"
--- @include "projections/lua/lib/load_job.lua"
--- @include "ledger/lua/lib/refuse.lua"

-- start_job(now, id, name, worker, started): start the queued job `id` of queue `name` and add its
-- six values to `started` (a function of its own, not a closure made at every fetch)
local function start_job(now, id, name, worker, started)
  local job = load_job(id)
  -- (text in arithmetic is converted once, tonumber converts it twice)
  local attempt = (job.attempt or 0) + 1
  local data = {attempt = attempt}
  if worker ~= '' then data.worker = worker end
  local beat = (job.heartbeat_timeout or 0) + 0
  emit(now, 'job_started', id, name, data)
  local n = #started
  started[n + 1], started[n + 2], started[n + 3] = id + 0, attempt, job.input or false
  started[n + 4], started[n + 5], started[n + 6] = beat, job.files or false, job.traceparent or false
end

local function start_jobs(now, name, count, worker, started)
  -- the two settings a fetch reads, not the whole hash (queue_created always writes `timeout`)
  local queue = redis.call('HMGET', K.queue(name), 'timeout', 'paused', 'max_running')
  if not queue[1] then refuse('NOT_FOUND', "queue '" .. name .. "' does not exist") end
  if queue[2] then return started end
  local max_running = tonumber(queue[3] or 0)
  if max_running > 0 then
    count = math.min(count, max_running - redis.call('ZCARD', K.queue_status(name, 'running')))
  end
  if count < 1 then return started end
  now = start_time(now)
  if redis.call('EXISTS', K.queue_heads(name)) == 0 then
    -- no quota key under its limit has a job waiting: the queue's own order is the whole order, and
    -- starting a job without a quota_key changes no lane, so one read gives every job to start
    for _, id in ipairs(redis.call('ZRANGE', K.queued_ids(name), 0, count - 1)) do
      start_job(now, id, name, worker, started)
    end
    return started
  end
  for _ = 1, count do
    local plain = redis.call('ZRANGE', K.queued_ids(name), 0, 0, 'WITHSCORES')
    local lane = redis.call('ZRANGE', K.queue_heads(name), 0, 0, 'WITHSCORES')
    local id = plain[1]
    if lane[1] and (not id or tonumber(lane[2]) < tonumber(plain[2])) then
      id = redis.call('ZRANGE', K.queue_lane(name, lane[1]), 0, 0)[1]
    end
    if not id then break end
    start_job(now, id, name, worker, started)
  end
  return started
end
