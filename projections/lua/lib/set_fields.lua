-- set_fields(key, data, names): copy the named fields of event data into a hash: numbers and
-- strings as they are, true as '1', non-empty tables as JSON; missing, null, false, 0-length left out
local function set_fields(key, data, names)
  for _, name in ipairs(names) do
    local v = data[name]
    if present(v) and v ~= false then
      if type(v) == 'table' then
        if next(v) ~= nil then redis.call('HSET', key, name, cjson.encode(v)) end
      elseif v == true then
        redis.call('HSET', key, name, '1')
      else
        redis.call('HSET', key, name, v)
      end
    end
  end
end
