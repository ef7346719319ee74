-- archive_trim: retention.  Record that the events up to ARGV[3] are archived (in segments already
-- written, durably, into the archive), and trim them from the stream, in one step: readers take
-- events up to the recorded id from the archive and later ones from the stream, so there is never
-- a moment when an event is in neither.  Refused if another archiver moved the record meanwhile,
-- if the record names another archive, or a directory archive not yet moved into the blob store.
-- KEYS[1] namespace prefix   KEYS[2] the archive record (hash: store, last_id, count)
-- ARGV[1] the last_id this archiver read ('' none)   ARGV[2] the archive's location
-- ARGV[3] new last_id   ARGV[4] events added   ARGV[5] XTRIM MINID threshold (just after ARGV[3])
-- ARGV[6] '1': the ledger is sealed, so no event after the last sealed one (the sealer's record,
-- K.seal's `last`) is trimmed: the sealer reads the stream, and a proof needs a sealed event
-- ARGV[7..] the jobs the segment's round indexed as forgotten and wholly archived: their history
-- lists are deleted (drop_archived_history), their ids kept by the archive's job index
-- returns the number of entries trimmed from the stream
-- errors  ARCHIVE_MOVED, ARCHIVE_ELSEWHERE, NOT_SEALED
--- @include "projections/lua/lib/drop_archived_history.lua"
local record = KEYS[2]
local previous = redis.call('HGET', record, 'last_id') or ''
if previous ~= ARGV[1] then
  return redis.error_reply('ARCHIVE_MOVED another archiver archived up to ' .. previous .. ' meanwhile')
end
local dir = redis.call('HGET', record, 'dir')
if dir then
  return redis.error_reply('ARCHIVE_ELSEWHERE this ledger archives to the directory ' .. dir)
end
local store = redis.call('HGET', record, 'store')
if store and store ~= ARGV[2] then
  return redis.error_reply('ARCHIVE_ELSEWHERE this ledger archives to ' .. store)
end
if ARGV[6] == '1' then
  local sealed = redis.call('HGET', K.seal, 'last') or ''
  local function order(id)
    local ms, seq = string.match(id, '^(%d+)-(%d+)$')
    return tonumber(ms) or -1, tonumber(seq) or -1
  end
  local sealed_ms, sealed_seq = order(sealed)
  local new_ms, new_seq = order(ARGV[3])
  if new_ms > sealed_ms or (new_ms == sealed_ms and new_seq > sealed_seq) then
    return redis.error_reply('NOT_SEALED the events up to ' .. ARGV[3] .. ' are not all sealed (sealed up to ' .. sealed .. ')')
  end
end
redis.call('HSET', record, 'store', ARGV[2], 'last_id', ARGV[3])
redis.call('HINCRBY', record, 'count', ARGV[4])
for i = 7, #ARGV do drop_archived_history(ARGV[i], ARGV[3]) end
return redis.call('XTRIM', K.events, 'MINID', ARGV[5])
