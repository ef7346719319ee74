-- check_idempotency: the scheduler's check of Idempotency-Keys.  Every key whose window is over is
-- forgotten (idempotency_expired): a request sent again with it is a new request.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] most keys to handle in this call
-- returns the keys forgotten
--- @include "ledger/lua/lib/each_due.lua"
--- @include "ledger/lua/lib/emit.lua"
local now, limit = NOW, tonumber(ARGV[2])
local function lookup(key)
  local found = redis.call('HMGET', K.idempotency(key), 'until', 'queue')
  if found[1] and tonumber(found[1]) <= now then return {queue = found[2] or ''} end
  -- a member without its lookup (or not yet due) is left to its own events
  return nil
end
local forgotten = {}
each_due(K.due_idempotency, now, limit, function(key, found)
  emit(now, 'idempotency_expired', nil, found.queue, {key = key})
  forgotten[#forgotten + 1] = key
end, lookup)
return forgotten
