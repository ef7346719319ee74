-- fire_launcher: the scheduler's launcher check, for one launcher whose time due_at has come.  The
-- caller computed next_at (croniter runs in Python) and how many firing times passed since due_at.
-- Only a caller that finds the launcher's next_at still at due_at acts, so schedulers racing fire
-- each firing time once; any other call does nothing.  A debounced @event launcher fires for its last trigger.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] launcher id   ARGV[3] due_at (ms)   ARGV[4] next_at (ms, '' none)
-- ARGV[5] missed: firing times after due_at, up to now, coalesced into this firing
-- ARGV[6] trigger event id ('' none: an @event launcher's last trigger)
-- returns 0 nothing to do, 1 fired, 2 skipped; BAD_REQUEST when next_at is not after due_at
--- @include "ledger/lua/lib/launch.lua"
--- @include "ledger/lua/lib/load_launcher.lua"
--- @include "ledger/lua/lib/refuse.lua"
local now, id, due_at = NOW, ARGV[2], tonumber(ARGV[3])
local next_at, missed, trigger = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
if next_at and next_at <= due_at then
  refuse('BAD_REQUEST', 'next_at ' .. ARGV[4] .. ' of launcher ' .. id .. ' is not after due_at ' .. ARGV[3])
end
local launcher = load_launcher(id)
if not launcher or tonumber(launcher.next_at) ~= due_at or due_at > now then return 0 end
if trigger == '' then trigger = launcher.last_trigger end
return launch(now, id, launcher, due_at, next_at, missed, trigger)
