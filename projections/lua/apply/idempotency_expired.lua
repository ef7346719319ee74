-- apply_idempotency_expired(e): the window of an Idempotency-Key is over: its lookup is forgotten, and
-- the key may name a new request
local function apply_idempotency_expired(e)
  local key = e.data.key
  redis.call('DEL', K.idempotency(key))
  redis.call('ZREM', K.due_idempotency, key)
end
