-- hold_writes(): from now on, hold back the writes that no applier reads back, until flush_held().
-- Those writes (the counters, the members of the queues', statuses' and deadlines' sorted sets,
-- the enqueue sequence, the last job id) are made by the held_* functions while HELD is a table,
-- and at once otherwise: `if HELD then held_zadd(...) else redis.call('ZADD', ...) end`, spelled
-- out at each write, so that a command's writes pay no call for it.  A command never holds: HELD
-- stays false.  Replay applies a batch of events in one script: it holds, so that each write is
-- kept in Lua as it stands after the events so far (a member's last score, or its removal; a
-- counter's sum; a string's last value), and flushes at the batch's end, one call per key or
-- counter where each event made calls of its own; the keys, fields, members and scores written are
-- the same.
-- HELD, while holding: zsets: key -> member -> score (false: removed); counts: key -> field -> sum;
-- strings: key -> value; after: functions the flush runs (a piece's own held write)
--- @each_call "HELD"
local HELD = false
local function hold_writes()
  HELD = {zsets = {}, counts = {}, strings = {}, after = {}}
end

-- held_in(kind, key): what is held for key among HELD[kind] (a table, made the first time)
local function held_in(kind, key)
  local all = HELD[kind]
  local held = all[key]
  if not held then
    held = {}
    all[key] = held
  end
  return held
end
