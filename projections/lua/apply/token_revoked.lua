-- apply_token_revoked(e): the token's lookup is gone, so its secret authenticates no more
local function apply_token_revoked(e)
  local digest = redis.call('HGET', K.tokens, e.data.name)
  if digest then redis.call('DEL', K.token(digest)) end
  redis.call('HDEL', K.tokens, e.data.name)
end
