-- put_queue: create a queue or replace its settings.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name   ARGV[3] settings JSON (every field, durations in ms)
-- returns 1 created, 0 updated
--- @include "ledger/lua/lib/emit.lua"
local now, name, settings = NOW, ARGV[2], ARGV[3]
if redis.call('EXISTS', K.queue(name)) == 1 then
  emit(now, 'queue_updated', nil, name, settings)
  return 0
end
emit(now, 'queue_created', nil, name, settings)
return 1
