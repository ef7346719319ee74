-- create_launcher: a new launcher on an existing queue.  Its spec was validated and its first firing
-- time (next_at) computed in Python (ledger/launchers.py); here it gets the next launcher id.  With an
-- Idempotency-Key already recorded for the same request, that launcher's id is answered again and
-- nothing is created (another request: MISMATCH).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] queue name
-- ARGV[3] launcher_created data JSON, without the launcher id
-- ARGV[4] Idempotency-Key, '' for none   ARGV[5] request hash   ARGV[6] the key's window (ms)
-- returns {the launcher's id, 1 when answered again from the key}; NOT_FOUND when there is no such
-- queue
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/handed_out.lua"
--- @include "ledger/lua/lib/idempotency_fields.lua"
--- @include "ledger/lua/lib/recorded_answer.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local now, name, key = NOW, ARGV[2], ARGV[4]
local answer = recorded_answer(key, ARGV[5])
if answer then return {answer, 1} end
require_queue(name)
local data = idempotency_fields(cjson.decode(ARGV[3]), now, key, ARGV[5], ARGV[6])
local last, step = handed_out(K.launcher_id)
data.launcher = last + step
emit(now, 'launcher_created', nil, name, data)
return {data.launcher, 0}
