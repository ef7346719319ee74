-- fire_launcher: the scheduler's launcher check, for one launcher whose time due_at has come.  The
-- caller computed next_at (croniter runs in Python) and how many firing times passed since due_at.
-- Only a caller that finds the launcher's next_at still at due_at acts, so schedulers racing fire
-- each firing time once; any other call does nothing.  A debounced @event launcher fires for its last
-- trigger.  A @cron or @interval launcher held back at a firing time stays due there (launch.lua):
-- while it is held this does nothing; once it is not, it is released (launcher_released: the firing
-- times after due_at, up to now, counted as skipped) and fires next at next_at.  Counting them costs
-- the caller, so it may leave `missed` empty: a launcher that would be released then answers 6 and
-- nothing is appended, and the caller asks again with the count.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] launcher id   ARGV[3] due_at (ms)   ARGV[4] next_at (ms, '' none)
-- ARGV[5] missed: firing times after due_at, up to now, coalesced into this firing ('' not counted)
-- ARGV[6] trigger event id ('' none: an @event launcher's last trigger)
-- returns 0 nothing to do, 1 fired, 2 skipped, 4 released, 5 held back, 6 to release (with a count);
-- BAD_REQUEST when next_at is not after due_at
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/held_back.lua"
--- @include "ledger/lua/lib/job_defaults.lua"
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
if launcher.held then
  if held_back(id, launcher, job_defaults(launcher.queue)) then return 0 end
  if not missed then return 6 end
  local data = {launcher = tonumber(id), due_at = due_at, next_at = next_at, skipped = missed}
  emit(now, 'launcher_released', nil, launcher.queue, data, 'launcher:' .. id)
  return 4
end
if trigger == '' then trigger = launcher.last_trigger end
local timed = launcher.type == '@cron' or launcher.type == '@interval'
return launch(now, id, launcher, due_at, next_at, missed or 0, trigger, nil, timed)
