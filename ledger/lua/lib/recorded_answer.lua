-- recorded_answer(key, hash): for a create sent with an Idempotency-Key (key, '' none) and its
-- request's hash: the answer recorded for the key of this command's ACTOR (a key is its sender's),
-- decoded JSON, nil when the key has none; refused with MISMATCH when the key was recorded for
-- another request (another hash).
--- @include "ledger/lua/lib/refuse.lua"
--- @include "projections/lua/lib/idempotency_lookup.lua"
local function recorded_answer(key, hash)
  if key == '' then return nil end
  local found = redis.call('HMGET', K.idempotency(idempotency_lookup(ACTOR, key)), 'request_hash', 'answer')
  if not found[1] then return nil end
  if found[1] ~= hash then
    refuse('MISMATCH', 'Idempotency-Key ' .. cjson.encode(key) .. ' was used for another request '
      .. '(another route, queue or body); use a new key for a new request')
  end
  return cjson.decode(found[2])
end
