-- apply(id, kind, at, job, queue, data): apply one event of the ledger to the projections.
-- The one piece of code that changes projections: every live command calls it right after its
-- XADD, and replay calls it for each event read back from the stream.  Deterministic: it reads only
-- the event and the projections, never the clock.  The APPLY table (event type -> applier) is
-- generated before it by ledger/scripts.py, holding the appliers (apply/<event type>.lua, or the one
-- that declares `--- @applies "<event type>"`) of the events the script can emit (all of them for
-- replay).  An event of a job goes into the job's history (record_history), unless its applier put
-- it there itself and said so by returning true.  Afterwards the jobs load_job read are forgotten:
-- the event may have changed them.
--- @include "projections/lua/lib/load_job.lua"
--- @include "projections/lua/lib/record_history.lua"

-- One table holds the event for every apply() (appliers read it while they run, keep nothing of
-- it, and never apply an event themselves; apply sets all six fields first): a table per event, or
-- per call, costs more than its fields.  (Made with its six fields, so that setting them never
-- grows it.)
--- @scratch "EVENT"
local EVENT = {id = false, type = false, at = false, job = false, queue = false, data = false}
-- '{}', the commonest data, is neither decoded nor made a table of its own at each event: appliers
-- read an event's data and never write it
local NO_DATA = {}
-- Nor is the data of a run of events alike (the jobs of one create, the starts of one worker)
-- decoded at each: DECODED_TEXT is the text decoded last and DECODED_DATA its table, which the next
-- event of the same text shares, for the same reason.
--- @each_call "DECODED_TEXT"
local DECODED_TEXT = false
--- @each_call "DECODED_DATA"
local DECODED_DATA = false
local function apply(id, kind, at, job, queue, data)
  local e = EVENT
  -- at + 0: one conversion of the text (tonumber makes two)
  e.id, e.type, e.at, e.job, e.queue = id, kind, at + 0, job, queue
  if data == '{}' then
    e.data = NO_DATA
  elseif data == DECODED_TEXT then
    e.data = DECODED_DATA
  else
    local decoded = cjson.decode(data)
    DECODED_TEXT, DECODED_DATA, e.data = data, decoded, decoded
  end
  local recorded = APPLY[kind](e)
  if job ~= '' and not recorded then record_history(id, job) end
  -- (the event's own job is most often the only one read: forgotten without a new table)
  LOADED[job] = nil
  if next(LOADED) then LOADED = {} end
end
