-- pause_launcher: pause a launcher (launcher_paused: it forgets its next firing and matches no event)
-- or resume it (launcher_resumed).  A resumed @cron or @interval launcher fires next at next_at,
-- computed from now in Python from the schedule it sent (refused if the launcher was declared again
-- meanwhile); an @at launcher that has neither fired nor skipped fires at its time (at once, if that
-- passed while it was paused); an @event launcher matches the events after its resume.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] launcher id   ARGV[3] '1' to pause, '0' to resume
-- ARGV[4] next_at (ms, '' none)   ARGV[5] type   ARGV[6] arguments   ARGV[7] tz ('' none): the
-- schedule next_at was computed from
-- returns 1 when the state changed, 0 when it already was so (nothing appended); NOT_FOUND; CONFLICT
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/load_launcher.lua"
--- @include "ledger/lua/lib/refuse.lua"
local now, id, pause, next_at = NOW, ARGV[2], ARGV[3] == '1', tonumber(ARGV[4])
local launcher = load_launcher(id)
if not launcher then refuse('NOT_FOUND', 'launcher ' .. id .. ' does not exist') end
if (launcher.paused ~= nil) == pause then return 0 end
local data = {launcher = tonumber(id)}
if pause then
  emit(now, 'launcher_paused', nil, launcher.queue, data)
  return 1
end
if launcher.type == '@cron' or launcher.type == '@interval' then
  if launcher.type ~= ARGV[5] or launcher.arguments ~= ARGV[6] or (launcher.tz or '') ~= ARGV[7] then
    refuse('CONFLICT', 'launcher ' .. id .. ' was declared again meanwhile: resume it again')
  end
  data.next_at = next_at
elseif launcher.type == '@at' and tonumber(launcher.fired) == 0 and tonumber(launcher.skipped) == 0 then
  data.next_at = next_at
end
emit(now, 'launcher_resumed', nil, launcher.queue, data)
return 1
