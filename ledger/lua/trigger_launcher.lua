-- trigger_launcher: the scheduler's event follower found an event matching an @event launcher.
-- Each event counts once, and only if it came after the launcher's last trigger (which starts at
-- its launcher_created): followers racing, or reading again, change nothing.  The event is read
-- back and matched here.  Without debounce the launcher fires at once; with it, the match moves its
-- next_at to the event's time + debounce (launcher_triggered), and the launcher check fires it then
-- (a next_at that had already come before this event fires first: that quiet period was over).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] launcher id   ARGV[3] event id
-- returns 0 nothing to do, 1 fired, 2 skipped, 3 triggered (debounced)
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/event_matches.lua"
--- @include "ledger/lua/lib/launch.lua"
--- @include "ledger/lua/lib/load_launcher.lua"
--- @include "ledger/lua/lib/newer_id.lua"
local now, id, event_id = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local launcher = load_launcher(id)
if not launcher or launcher.type ~= '@event' or not newer_id(event_id, launcher.last_trigger) then return 0 end
local entry = redis.call('XRANGE', K.events, event_id, event_id)[1]
local at = entry and event_matches(id, launcher, entry)
if not at then return 0 end
local debounce = tonumber(launcher.debounce or 0)
if debounce == 0 then return launch(now, id, launcher, at, nil, 0, event_id) end
local due_at = tonumber(launcher.next_at)
if due_at and due_at <= at then launch(now, id, launcher, due_at, nil, 0, launcher.last_trigger) end
emit(now, 'launcher_triggered', nil, launcher.queue, {launcher = tonumber(id), trigger = event_id, due_at = at + debounce})
return 3
