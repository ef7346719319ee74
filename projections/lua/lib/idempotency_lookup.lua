-- idempotency_lookup(owner, key): the name of an Idempotency-Key's lookup (the key of
-- K.idempotency): `owner:key`, a key being its sender's (the token's name, or local); the key alone
-- for one recorded before keys had owners (owner nil or null)
local function idempotency_lookup(owner, key)
  if owner == nil or owner == cjson.null then return key end
  return owner .. ':' .. key
end
