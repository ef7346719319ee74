-- set_fields(key, data, names, pairs): copy the named fields of event data into a hash: numbers and
-- strings as they are, true as '1', non-empty tables as JSON; missing, null, false, 0-length left
-- out.  One HSET, of those fields and of `pairs` (field, value, ...: written with them; optional).
local function set_fields(key, data, names, pairs)
  local args, null = pairs or {}, cjson.null
  for i = 1, #names do  -- not ipairs: a call per field
    local name = names[i]
    local v = data[name]
    if v ~= nil and v ~= null and v ~= false then  -- present(v), spelled out: a call costs more
      if type(v) == 'table' then
        if next(v) ~= nil then args[#args + 1] = name; args[#args + 1] = cjson.encode(v) end
      else
        args[#args + 1] = name
        args[#args + 1] = (v == true) and '1' or v
      end
    end
  end
  if #args > 0 then redis.call('HSET', key, unpack(args)) end
end
