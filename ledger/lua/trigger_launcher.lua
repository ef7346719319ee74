-- trigger_launcher: the scheduler's event follower found an event matching an @event launcher.
-- Each event counts once, and only if it came after the launcher's last trigger from its stream:
-- followers racing, or reading again, change nothing.  An event of the launcher's own partition (the
-- only one, on a ledger not split) is read back and matched here, and counts after the launcher's
-- last_trigger (which starts at its launcher_created).  An event of another partition `source` of a
-- split ledger cannot be read from here: the follower passes its fields, matched here the same way;
-- it counts after last_trigger:<source>, and, before the launcher's first trigger from that stream,
-- only if it is not older than the launcher (its `at` not before created_at).
-- Without debounce the launcher fires at once; with it, the match moves its next_at to the event's
-- time + debounce (launcher_triggered; never earlier than a next_at still to come, as events of
-- several streams come in no common order), and the launcher check fires it then (a next_at that
-- had already come before this event fires first: that quiet period was over).
-- A paused launcher matches nothing, and once resumed, nothing older than its resume.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] launcher id   ARGV[3] event id
-- ARGV[4] the partition of the event's stream ('' the launcher's own); when another's, the event's
-- ARGV[5] type   ARGV[6] queue ('' none)   ARGV[7] at (ms)   ARGV[8] data (JSON; only `launcher` is read)
-- returns 0 nothing to do, 1 fired, 2 skipped, 3 triggered (debounced)
--- @include "ledger/lua/lib/emit.lua"
--- @include "ledger/lua/lib/event_matches.lua"
--- @include "ledger/lua/lib/launch.lua"
--- @include "ledger/lua/lib/load_launcher.lua"
--- @include "ledger/lua/lib/newer_id.lua"
local now, id, event_id = NOW, ARGV[2], ARGV[3]
local source = tonumber(ARGV[4] or '')
local launcher = load_launcher(id)
if not launcher or launcher.type ~= '@event' or launcher.paused then return 0 end
local last = launcher.last_trigger
if source then last = launcher['last_trigger:' .. source] end
if not newer_id(event_id, last) then return 0 end
local entry
if source then
  entry = {event_id, {'type', ARGV[5], 'queue', ARGV[6], 'at', ARGV[7], 'data', ARGV[8]}}
else
  entry = redis.call('XRANGE', K.events, event_id, event_id)[1]
end
local at = entry and event_matches(id, launcher, entry)
if not at or (source and not last and at < tonumber(launcher.created_at)) then return 0 end
if launcher.resumed_at and at < tonumber(launcher.resumed_at) then return 0 end
local debounce = tonumber(launcher.debounce or 0)
if debounce == 0 then return launch(now, id, launcher, at, nil, 0, event_id, source) end
local due_at = tonumber(launcher.next_at)
if due_at and due_at <= at then launch(now, id, launcher, due_at, nil, 0, launcher.last_trigger) end
local until_at = at + debounce
if due_at and due_at > at and due_at > until_at then until_at = due_at end
emit(now, 'launcher_triggered', nil, launcher.queue, {launcher = tonumber(id), trigger = event_id, due_at = until_at, source = source})
return 3
