-- claim_blob: the blob collector's last check before it deletes a blob from the store.  The blob must
-- be named by no job still in the projections (not in the live `blobs` hash), and have been seen so
-- since at least the cut-off, or be claimed already by a collector that stopped half way.  It is then
-- marked as being deleted, so that a put of the same bytes meanwhile (touch_blob) waits for the delete.
-- KEYS[1] namespace prefix
-- ARGV[1] SHA-256   ARGV[2] cut-off: first seen unnamed at or before it (ms)   ARGV[3] now (ms)
-- returns 1 claimed (the caller deletes the blob, then the entry), 0 not to be deleted
local sha = ARGV[1]
if redis.call('HEXISTS', K.blob_refs, sha) == 1 then
  redis.call('HDEL', K.blob_unmarked, sha)
  return 0
end
local seen = redis.call('HGET', K.blob_unmarked, sha)
if not seen then
  return 0
end
if string.sub(seen, 1, 9) ~= 'deleting:' and tonumber(seen) > tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', K.blob_unmarked, sha, 'deleting:' .. ARGV[3])
return 1
