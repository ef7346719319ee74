-- present(v): true when a decoded JSON value is neither missing nor JSON null
local function present(v)
  return v ~= nil and v ~= cjson.null
end
