-- remember_request(e, answer): a creating event that carries an Idempotency-Key records it, for the
-- key's owner (idempotency_lookup): the lookup idem:{owner:key} (the request's hash, what it
-- answered, until when, the queue) and its place in due:idempotency, where the scheduler finds it
-- when the window is over (idempotency_expired).
-- answer: the JSON value the request answered (a job or launcher id, or the batch's ids).
--- @include "projections/lua/lib/idempotency_lookup.lua"
--- @include "projections/lua/lib/present.lua"
local function remember_request(e, answer)
  local d = e.data
  if not present(d.idempotency_key) then return end
  local lookup = idempotency_lookup(d.idempotency_owner, d.idempotency_key)
  redis.call('HSET', K.idempotency(lookup), 'request_hash', d.request_hash,
    'answer', cjson.encode(answer), 'until', d.idempotency_until, 'queue', e.queue)
  redis.call('ZADD', K.due_idempotency, d.idempotency_until, lookup)
end
