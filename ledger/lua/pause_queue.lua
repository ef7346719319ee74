-- pause_queue: a paused queue takes jobs but hands none out.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name   ARGV[3] '1' to pause, '0' to resume
-- returns 1 when the state changed, 0 when it already was so (nothing appended); NOT_FOUND
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local now, name, pause = NOW, ARGV[2], ARGV[3] == '1'
local queue = require_queue(name)
if (queue.paused ~= nil) == pause then return 0 end
if pause then emit(now, 'queue_paused', nil, name, '{}') else emit(now, 'queue_resumed', nil, name, '{}') end
return 1
