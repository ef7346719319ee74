-- load_launcher(id): the launcher's stored fields as a table, or nil when there is no such launcher
--- @include "ledger/lua/lib/load_hash.lua"
local function load_launcher(id)
  return load_hash(K.launcher(id))
end
