-- load_launcher(id): the launcher's stored fields as a table, or nil when there is no such launcher
local function load_launcher(id)
  local flat = redis.call('HGETALL', K.launcher(id))
  if #flat == 0 then return nil end
  local launcher = {}
  for i = 1, #flat, 2 do launcher[flat[i]] = flat[i + 1] end
  return launcher
end
