-- revoke_token: the token stops authenticating at once, on every server of the ledger.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] token name
-- returns 1; NOT_FOUND when no live token has that name
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/refuse.lua"
local now, name = NOW, ARGV[2]
if redis.call('HEXISTS', K.tokens, name) == 0 then
  refuse('NOT_FOUND', 'token ' .. name .. ' does not exist')
end
emit(now, 'token_revoked', nil, '', {name = name})
return 1
