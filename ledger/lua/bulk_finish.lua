-- bulk_finish: record that a bulk operation went through every job its filter matched: how many
-- the finishing run matched and how many events it appended.  Once only: an operation already
-- finished appends nothing.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] operation id   ARGV[3] matched   ARGV[4] done
-- returns 1; 0 when it had finished already; NOT_FOUND when no such operation started
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/refuse.lua"
local operation = ARGV[2]
local found = redis.call('HMGET', K.bulk(operation), 'action', 'finished_at', 'queue')
if not found[1] then refuse('NOT_FOUND', 'no bulk operation ' .. operation) end
if found[2] then return 0 end
emit(NOW, 'bulk_finished', nil, found[3] or '', {operation = operation, matched = tonumber(ARGV[3]),
  done = tonumber(ARGV[4])})
return 1
