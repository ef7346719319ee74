-- import_events: import.  Append events read from an exported ledger to KEYS[1]'s stream with
-- their own ids, and apply each right after its append, as a live command does: the projections of
-- the namespace change only by applying events that are in its stream (what the batch's
-- appliers hold back, hold_writes.lua, written once at its end).
-- KEYS[1] namespace prefix
-- ARGV    nine values per event: id, type, v, at, job ('' none), queue ('' none), actor ('' none:
--         an entry written before events recorded their actor), data as stored, data at the
--         current version of its type ('' when the stored data is current)
-- The ledger's clock moves to the latest `at` imported, so the commands that follow stamp no
-- earlier time (see ledger/scripts.py).
-- returns the number of events imported
--- @include "projections/lua/apply.lua"
--- @include "projections/lua/lib/flush_held.lua"
--- @include "projections/lua/lib/hold_writes.lua"
local latest = tonumber(redis.call('GET', K.clock) or 0)
hold_writes()
for i = 1, #ARGV, 9 do
  local id, kind, v, at, job, queue = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local actor, data, current = ARGV[i + 6], ARGV[i + 7], ARGV[i + 8]
  local fields = {'type', kind, 'v', v, 'at', at}
  if job ~= '' then fields[#fields + 1] = 'job'; fields[#fields + 1] = job end
  if queue ~= '' then fields[#fields + 1] = 'queue'; fields[#fields + 1] = queue end
  if actor ~= '' then fields[#fields + 1] = 'actor'; fields[#fields + 1] = actor end
  fields[#fields + 1] = 'data'
  fields[#fields + 1] = data
  redis.call('XADD', K.events, id, unpack(fields))
  if current == '' then current = data end
  apply(id, kind, at, job, queue, current)
  if tonumber(at) > latest then latest = tonumber(at) end
end
flush_held()
if #ARGV > 0 then redis.call('SET', K.clock, latest) end
return #ARGV / 9
