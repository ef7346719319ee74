-- load_hash(key): a hash's fields as a table, or nil when there is no such key
local function load_hash(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local fields = {}
  for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
  return fields
end
