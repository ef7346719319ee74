-- handed_out(counter): the last id handed out by `counter` (K.job_id, K.launcher_id) and the step to the
-- next one.  A single ledger hands out 1, 2, 3, ...; partition p of a ledger split into n partitions
-- (its `partition` key holds "n:p") hands out p + n, p + 2n, ..., so an id names its partition.
local function handed_out(counter)
  local got = redis.call('MGET', counter, K.partition)
  if not got[2] then return tonumber(got[1] or '0'), 1 end
  local n, p = string.match(got[2], '^(%d+):(%d+)$')
  return tonumber(got[1] or p), tonumber(n)
end
