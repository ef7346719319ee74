-- fold_stream: replay, reading on the server.  Apply a ledger's stream, after ARGV[1] up to ARGV[2]
-- (inclusive), at most ARGV[3] events, to the projections of KEYS[1]'s namespace with the same
-- apply() that every live command and apply_events use; the events do not travel to the client
-- and back; what the batch's appliers hold back (hold_writes.lua) is written once, at its end.  It stops
-- before an event it cannot apply as stored (a type it does not know, or an older version of its
-- type: the client upcasts those and hands them to apply_events), and at once when the ledger has
-- archived events (the client reads those from the archive).
-- KEYS[1] namespace prefix of the projections being built
-- KEYS[2] the ledger's stream   KEYS[3] the ledger's archive record
-- ARGV[1] the id after which to start ('' from the first)   ARGV[2] the last id to apply ('' none)
-- ARGV[3] most events to apply
-- returns {events applied, id of the last applied ('' none), 1 when it stopped before an event it
-- cannot apply (or the archive) else 0, 1 when it read ARGV[3] events else 0}
--- @include "projections/lua/apply.lua"
--- @include "projections/lua/lib/flush_held.lua"
--- @include "projections/lua/lib/hold_writes.lua"
if redis.call('EXISTS', KEYS[3]) == 1 then return {0, '', 1, 0} end
local most = tonumber(ARGV[3])
local start = ARGV[1] == '' and '-' or '(' .. ARGV[1]
local entries = redis.call('XRANGE', KEYS[2], start, ARGV[2] == '' and '+' or ARGV[2], 'COUNT', most)
local current = {}  -- the versions as the stream stores them, as text
for kind, version in pairs(V) do current[kind] = tostring(version) end
local last, n = '', #entries
hold_writes()
for i = 1, n do
  local entry = entries[i]
  local raw = entry[2]
  local kind, version, at, job, queue, data
  if raw[1] == 'type' and raw[3] == 'v' and raw[5] == 'at' and raw[7] == 'job' and raw[9] == 'queue'
    and raw[13] == 'data' and raw[15] == nil then
    -- as emit() writes an event of a job: the fields by position, without a table of them per event
    kind, version, at, job, queue, data = raw[2], raw[4], raw[6], raw[8], raw[10], raw[14]
  else
    local f = {}
    for j = 1, #raw, 2 do f[raw[j]] = raw[j + 1] end
    kind, version, at, job, queue, data = f.type, f.v or '1', f.at, f.job or '', f.queue or '', f.data
  end
  if current[kind] == nil or version ~= current[kind] then
    flush_held()
    return {i - 1, last, 1, 0}
  end
  if data == nil or data == '' then data = '{}' end
  apply(entry[1], kind, at, job, queue, data)
  last = entry[1]
end
flush_held()
return {n, last, 0, n == most and 1 or 0}
