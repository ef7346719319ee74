-- idempotency_fields(data, now, key, hash, window, answer): data with the fields a creating event
-- carries so that applying it records the Idempotency-Key (projections/lua/lib/remember_request.lua):
-- the key, its owner (the command's ACTOR: a key is its sender's), the request's hash and the end of
-- the key's window (now + window ms); data unchanged when key is ''.  answer (optional): what the
-- request answered, when the event alone does not say.
local function idempotency_fields(data, now, key, hash, window, answer)
  if key == '' then return data end
  data.idempotency_key = key
  data.idempotency_owner = ACTOR
  data.request_hash = hash
  data.idempotency_until = now + tonumber(window)
  if answer ~= nil then data.idempotency_answer = answer end
  return data
end
