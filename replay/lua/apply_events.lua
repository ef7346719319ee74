-- apply_events: replay.  Apply a batch of events read back from a ledger's stream to the
-- projections of KEYS[1]'s namespace, with the same apply() that every live command uses (what
-- the batch's appliers hold back, hold_writes.lua, written once at its end).
-- KEYS[1] namespace prefix of the projections being built
-- ARGV    six values per event: id, type, at, job ('' none), queue ('' none), data JSON
-- returns the number of events applied
--- @include "projections/lua/apply.lua"
--- @include "projections/lua/lib/flush_held.lua"
--- @include "projections/lua/lib/hold_writes.lua"
hold_writes()
for i = 1, #ARGV, 6 do
  apply(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5])
end
flush_held()
return #ARGV / 6
