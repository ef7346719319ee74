-- read_keys: verify's read of projection keys, together with the ledger's position, in one atomic
-- step, so that they can be compared with a rebuild caught up to exactly that position.
-- KEYS[1] namespace prefix   KEYS[2] its archive record   KEYS[3..] the keys to read
-- returns {newest event id in the stream ('' none), archived up to ('' none), live generation ('' for
--   0), {type, content} per key}
--   content: string {value}, hash {field, value, ...}, list {items}, set {members},
--   zset {member, score, ...} in order; none (no such key) {}
local newest = redis.call('XREVRANGE', K.events, '+', '-', 'COUNT', 1)
local out = {newest[1] and newest[1][1] or '', redis.call('HGET', KEYS[2], 'last_id') or '', G or ''}
for i = 3, #KEYS do  -- names built by the caller for one generation
  local key = KEYS[i]
  local kind = redis.call('TYPE', key).ok
  local content = {}
  if kind == 'string' then content = {redis.call('GET', key)}
  elseif kind == 'hash' then content = redis.call('HGETALL', key)
  elseif kind == 'list' then content = redis.call('LRANGE', key, 0, -1)
  elseif kind == 'set' then content = redis.call('SMEMBERS', key)
  elseif kind == 'zset' then content = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  end
  out[#out + 1] = {kind, content}
end
return out
