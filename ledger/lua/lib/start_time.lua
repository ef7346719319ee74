-- start_time(now): when the jobs a fetch stamped `now` hands out really start: `now`, or the
-- server's time when that is later by more than START_LAG_MS.  A fetch that waited in a stalled Redis
-- would otherwise start its jobs in the past, handed out with their run time partly or wholly gone,
-- and the scheduler would time them out while their worker runs them.  The time given is recorded as
-- the job_started event's `at`, and apply reads it from there, so replay gives the same projections.
-- (A caller's clock ahead of the server's, as a frozen test clock is, is never moved back.)
local START_LAG_MS = 250
local function start_time(now)
  local server = redis.call('TIME')
  local server_ms = server[1] * 1000 + math.floor(server[2] / 1000)
  if server_ms - now > START_LAG_MS then return server_ms end
  return now
end
