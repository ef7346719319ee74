-- apply_token_created(e): the lookup a request's token is found by (token:{digest}), and the name's
-- entry in the list of live tokens
local function apply_token_created(e)
  local d = e.data
  redis.call('HSET', K.token(d.digest), 'name', d.name, 'scopes', cjson.encode(d.scopes),
    'digest', d.digest, 'created_at', e.at)
  redis.call('HSET', K.tokens, d.name, d.digest)
end
