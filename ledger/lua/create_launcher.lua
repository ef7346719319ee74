-- create_launcher: a new launcher on an existing queue.  Its spec was validated and its first firing
-- time (next_at) computed in Python (ledger/launchers.py); here it gets the next launcher id.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3] launcher_created data JSON, without the launcher id
-- returns the launcher's id; NOT_FOUND when there is no such queue
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local now, name = tonumber(ARGV[1]), ARGV[2]
require_queue(name)
local data = cjson.decode(ARGV[3])
data.launcher = tonumber(redis.call('GET', K.launcher_id) or '0') + 1
emit(now, 'launcher_created', nil, name, data)
return data.launcher
