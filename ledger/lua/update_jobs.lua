-- update_jobs: many PATCH /job/{id} in one call (a worker finishing a batch of jobs): each update
-- exactly as update_job makes it and checked on its own (ledger/lua/lib/update_each.lua).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2..] six values per update, as update_job's ARGV[2..7]
-- returns per update: the number of events appended, or the refusal as text "CODE message"
--- @include "ledger/lua/lib/update_each.lua"
return update_each(NOW, ARGV, 2)
