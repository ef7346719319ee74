-- update_job: PATCH /job/{id}: progress / message, output, and a new status (ledger/lua/lib/update.lua).
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] job id   ARGV[3] status ('' none; any status: the table decides)
-- ARGV[4] output JSON text ('' none)   ARGV[5] attempt the caller acts for ('' none)
-- ARGV[6] {progress, message} JSON ('' none)   ARGV[7] error {kind, message} JSON ('' none)
-- returns the number of events appended; NOT_FOUND, CONFLICT, BAD_REQUEST
--- @include "ledger/lua/lib/update.lua"
return update(NOW, ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
