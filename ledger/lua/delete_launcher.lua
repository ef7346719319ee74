-- delete_launcher: a launcher stops for good (the jobs it created stay).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] launcher id
-- returns 1; NOT_FOUND when there is no such launcher
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/load_launcher.lua"
--- @include "ledger/lua/lib/refuse.lua"
local now, id = NOW, ARGV[2]
local launcher = load_launcher(id)
if not launcher then refuse('NOT_FOUND', 'launcher ' .. id .. ' does not exist') end
emit(now, 'launcher_deleted', nil, launcher.queue, {launcher = tonumber(id)})
return 1
