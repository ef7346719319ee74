-- apply_launcher_deleted(e): the launcher is gone, and with it its schedule, its pending set and its
-- name (the jobs it created stay, and keep its id in their launcher field)
local function apply_launcher_deleted(e)
  local id = e.data.launcher
  local name = redis.call('HGET', K.launcher(id), 'name')
  if name then redis.call('HDEL', K.launcher_names, name) end
  redis.call('DEL', K.launcher(id), K.launcher_pending(id))
  redis.call('SREM', K.launchers, id)
  redis.call('SREM', K.event_launchers, id)
  redis.call('ZREM', K.due_launch, id)
end
