-- drop_archived_histories: replay.  After a batch of archived events was applied to the projections
-- of KEYS[1]'s namespace, delete the history lists of the jobs among ARGV[2..] that the archive trim
-- would have deleted (drop_archived_history, with ARGV[1] the archive's end), as the live ledger did.
-- KEYS[1] namespace prefix of the projections being built
-- ARGV[1] the source ledger's archived position   ARGV[2..] job ids of the batch's events
-- returns how many history lists it deleted
--- @include "projections/lua/lib/drop_archived_history.lua"
local dropped = 0
for i = 2, #ARGV do
  if drop_archived_history(ARGV[i], ARGV[1]) then dropped = dropped + 1 end
end
return dropped
