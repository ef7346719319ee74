-- due(key, now, limit): up to limit members of a deadline set whose time has come, oldest first
local function due(key, now, limit)
  return redis.call('ZRANGE', key, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
end
