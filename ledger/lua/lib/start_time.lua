-- start_time(now): when the jobs a fetch stamped `now` hands out really start: `now`, or, when the
-- command waited in Redis more than START_LAG_MS (the server's TIME less SENT, the sender's real time
-- as it sent the command), `now` plus that wait.  A fetch that waited in a stalled Redis would
-- otherwise start its jobs in the past, handed out with their run time partly or wholly gone, and the
-- scheduler would time them out while their worker runs them.  The time given is recorded as the
-- job_started event's `at`, and apply reads it from there, so replay gives the same projections.
-- Only the wait is measured against the server's time: the time itself stays the caller's clock's.
local START_LAG_MS = 250
local function start_time(now)
  local server = redis.call('TIME')
  local waited = server[1] * 1000 + math.floor(server[2] / 1000) - SENT
  if waited > START_LAG_MS then return now + waited end
  return now
end
