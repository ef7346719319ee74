-- swap_generation: the last step of an online rebuild (replay/swap.py).  The new generation of
-- projections has been folded up to ARGV[1] while the server kept writing; this applies the events
-- appended since (the tail, at most ARGV[4] of them) with the same apply() and switches the
-- ledger's generation pointer to it, all in one atomic call: no command runs between the last
-- event applied and the switch, and every command after it writes to the new generation.
-- KEYS[1] the new generation's prefix ({NS}:g<N>:)   KEYS[2] the ledger's prefix ({NS}:)
-- ARGV[1] id of the last event folded into the new generation ('' none)
-- ARGV[2] the live generation the rebuild started from ('0': unprefixed)   ARGV[3] the new one
-- ARGV[4] the most tail events to apply here
-- returns {'swapped', tail applied} | {'moved', live generation}: another swap came first |
--   {'behind', n}: more than ARGV[4] events, or archived ones, or ones at an older version (which
--   Python upcasts), to fold first
--- @include "projections/lua/apply.lua"
--- @include "ledger/lua/lib/newer_id.lua"
local ledger, position, limit = KEYS[2], ARGV[1], tonumber(ARGV[4])
local live = redis.call('GET', ledger .. 'generation') or '0'
if live ~= ARGV[2] then return {'moved', live} end
local archived = redis.call('HGET', ledger .. 'archive', 'last_id')
if archived and newer_id(archived, position ~= '' and position or nil) then return {'behind', 0} end
local start = position ~= '' and ('(' .. position) or '-'
local tail = redis.call('XRANGE', ledger .. 'events', start, '+', 'COUNT', limit + 1)
if #tail > limit then return {'behind', #tail} end
local events = {}
for _, entry in ipairs(tail) do
  local f = {}
  for i = 1, #entry[2], 2 do f[entry[2][i]] = entry[2][i + 1] end
  if tonumber(f.v or '1') ~= V[f.type] then return {'behind', #tail} end
  events[#events + 1] = {entry[1], f}
end
for _, e in ipairs(events) do
  local f = e[2]
  apply(e[1], f.type, f.at, f.job or '', f.queue or '', f.data or '{}')
end
redis.call('SET', ledger .. 'generation', ARGV[3])
return {'swapped', #events}
