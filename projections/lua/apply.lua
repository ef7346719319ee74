-- apply(id, kind, at, job, queue, data): apply one event of the ledger to the projections.
-- The one piece of code that changes projections: every live command calls it right after its
-- XADD, and replay calls it for each event read back from the stream.  Deterministic: it reads only
-- the event and the projections, never the clock.  The APPLY table (event type -> applier) is
-- generated before it by ledger/scripts.py, holding the appliers (apply/<event type>.lua, or the one
-- that declares `--- @applies "<event type>"`) of the events the script can emit (all of them for
-- replay).  Afterwards the jobs load_job read are forgotten: the event may have changed them.
--- @include "projections/lua/lib/load_job.lua"

local function apply(id, kind, at, job, queue, data)
  APPLY[kind]({id = id, type = kind, at = tonumber(at), job = job, queue = queue, data = cjson.decode(data)})
  if job ~= '' then redis.call('RPUSH', K.history(job), id) end
  if next(LOADED) then LOADED = {} end
end
