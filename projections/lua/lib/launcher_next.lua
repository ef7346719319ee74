-- launcher_next(id, next_at): when the launcher fires next, or never (nil / JSON null): kept in its
-- hash and in K.due_launch alike
--- @include "projections/lua/lib/present.lua"
local function launcher_next(id, next_at)
  if present(next_at) then
    redis.call('HSET', K.launcher(id), 'next_at', next_at)
    redis.call('ZADD', K.due_launch, next_at, id)
  else
    redis.call('HDEL', K.launcher(id), 'next_at')
    redis.call('ZREM', K.due_launch, id)
  end
end
