-- history_field(job, e, fields): for an applier that writes the job hash anyway: add the event's id
-- to the job's inline history in the same HSET (`h` and its new value appended to `fields`); true
-- when it did, false when the history is not inline or would grow too long (apply() records it)
--- @include "projections/lua/lib/history_appended.lua"
local function history_field(job, e, fields)
  if not job.h then return false end
  local appended = history_appended(job.h, e.id)
  if not appended then return false end
  fields[#fields + 1] = 'h'
  fields[#fields + 1] = appended
  return true
end
