-- put_launcher: declare the launcher named `name`: create it (launcher_created), or, when a launcher
-- has that name, give it the new declaration (launcher_updated) unless it is the same declaration
-- (same SHA-256 `declared`): then nothing is appended, so declaring a launcher at every start is
-- free.  An update keeps the launcher's next firing when its schedule (type, arguments, tz) is the
-- same and it is not held back; else it fires next at next_at (computed from now in Python).  A
-- paused launcher stays paused (with no next firing).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] name   ARGV[3] queue name
-- ARGV[4] the declaration: launcher_created data JSON, with name and declared, without id and next_at
-- ARGV[5] next_at (ms, '' none)   ARGV[6] declared (SHA-256 hex of the declaration)
-- ARGV[7] type   ARGV[8] arguments as stored ('' for @event)   ARGV[9] tz ('' none)
-- returns {the launcher's id, 1 created, 2 updated, 0 unchanged}; NOT_FOUND when there is no such queue
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/handed_out.lua"
--- @include "ledger/lua/lib/load_launcher.lua"
--- @include "ledger/lua/lib/require_queue.lua"
local now, name, queue, next_at, declared = NOW, ARGV[2], ARGV[3], tonumber(ARGV[5]), ARGV[6]
local kind, arguments, tz = ARGV[7], ARGV[8], ARGV[9]
require_queue(queue)
local data = cjson.decode(ARGV[4])
local id = redis.call('HGET', K.launcher_names, name)
if not id then
  local last, step = handed_out(K.launcher_id)
  data.launcher, data.next_at = last + step, next_at
  emit(now, 'launcher_created', nil, queue, data)
  return {data.launcher, 1}
end
local launcher = load_launcher(id)
if launcher.declared == declared then return {tonumber(id), 0} end
local same = launcher.type == kind and arguments ~= '' and launcher.arguments == arguments
  and (launcher.tz or '') == tz
if launcher.paused then
  next_at = nil
elseif same and not launcher.held then
  next_at = tonumber(launcher.next_at)
end
data.launcher, data.next_at = tonumber(id), next_at
emit(now, 'launcher_updated', nil, queue, data)
return {tonumber(id), 2}
