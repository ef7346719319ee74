-- touch_blob: a blob was just stored again, or is about to be named by a new job: the blob collector
-- forgets when it first saw it unnamed, so that the grace starts again.  While a collector deletes it
-- (claim_blob, not older than ARGV[3]) nothing is changed: the caller waits and stores it again after.
-- KEYS[1] namespace prefix
-- ARGV[1] SHA-256   ARGV[2] now (ms)   ARGV[3] how long (ms) a claim may take before it counts as abandoned
-- returns 1 done, 0 being deleted right now
local sha = ARGV[1]
local seen = redis.call('HGET', K.blob_unmarked, sha)
if seen and string.sub(seen, 1, 9) == 'deleting:' then
  if tonumber(ARGV[2]) - tonumber(string.sub(seen, 10)) < tonumber(ARGV[3]) then
    return 0
  end
end
redis.call('HDEL', K.blob_unmarked, sha)
return 1
