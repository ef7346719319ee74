-- run_deadline(job, started_at, last_beat): when a running job times out (ms), the earlier of
-- started_at + timeout and last_beat + heartbeat_timeout; nil when both are disabled (0)
local function run_deadline(job, started_at, last_beat)
  local deadline = nil
  local timeout = (job.timeout or 0) + 0  -- + 0: one conversion of the text, tonumber makes two
  local beat = (job.heartbeat_timeout or 0) + 0
  if timeout > 0 then deadline = started_at + timeout end
  if beat > 0 and (deadline == nil or last_beat + beat < deadline) then deadline = last_beat + beat end
  return deadline
end
