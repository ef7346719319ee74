-- Idempotency-Key of a create command: ARGV key ('' none), request hash, window (ms).
-- recorded_answer(key, hash): the answer recorded for the key (decoded JSON), nil when the key has
-- none; refused with MISMATCH when the key was recorded for another request (another hash).
-- idempotency_fields(data, now, key, hash, window, answer): the fields a creating event carries
-- so that applying it records the key (projections/lua/lib/remember_request.lua); data unchanged
-- when key is ''.  answer (optional) is what the request answered, when the event alone does not say.
--- @include "ledger/lua/lib/refuse.lua"
local function recorded_answer(key, hash)
  if key == '' then return nil end
  local found = redis.call('HMGET', K.idempotency(key), 'request_hash', 'answer')
  if not found[1] then return nil end
  if found[1] ~= hash then
    refuse('MISMATCH', 'Idempotency-Key ' .. cjson.encode(key) .. ' was used for another request '
      .. '(another route, queue or body); use a new key for a new request')
  end
  return cjson.decode(found[2])
end

local function idempotency_fields(data, now, key, hash, window, answer)
  if key == '' then return data end
  data.idempotency_key = key
  data.request_hash = hash
  data.idempotency_until = now + tonumber(window)
  if answer ~= nil then data.idempotency_answer = answer end
  return data
end
