-- create_token: a new API token, recorded as the SHA-256 of its secret (never the secret).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] token name   ARGV[3] digest (hex)   ARGV[4] the token_created data (JSON)
-- returns 1; CONFLICT when a live token has that name or that digest
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/refuse.lua"
local now, name, digest, data = NOW, ARGV[2], ARGV[3], ARGV[4]
if redis.call('HEXISTS', K.tokens, name) == 1 then
  refuse('CONFLICT', 'a token named ' .. name .. ' exists already (revoke it first)')
end
if redis.call('EXISTS', K.token(digest)) == 1 then
  refuse('CONFLICT', 'a live token has this secret already')
end
emit(now, 'token_created', nil, '', data)
return 1
