-- bulk_start: record the start of a bulk operation: its action and filter, and (in the entry) the
-- actor that asked for it.  The event's id is the operation's id, which every job event of the
-- operation carries.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2] the bulk_started data (JSON)   ARGV[3] the queue it names ('' none)
-- returns the operation's id
--- @include "ledger/lua/lib/emit.lua"
return emit(NOW, 'bulk_started', nil, ARGV[3], ARGV[2])
