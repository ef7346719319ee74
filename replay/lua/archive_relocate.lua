-- archive_relocate: retention.  Switch a ledger's archive record from the directory it was kept in
-- (before the archive went to the blob store) to the store that now holds a copy of every segment.
-- Refused when the record changed meanwhile.
-- KEYS[1] namespace prefix   KEYS[2] the archive record (hash: dir or store, last_id, count)
-- ARGV[1] the record's last_id   ARGV[2] its directory   ARGV[3] the store's location
-- returns 1
-- errors  ARCHIVE_MOVED
local record = KEYS[2]
local last = redis.call('HGET', record, 'last_id') or ''
local dir = redis.call('HGET', record, 'dir') or ''
if last ~= ARGV[1] or dir ~= ARGV[2] then
  return redis.error_reply('ARCHIVE_MOVED the archive record changed meanwhile')
end
redis.call('HDEL', record, 'dir')
redis.call('HSET', record, 'store', ARGV[3])
return 1
