-- event_matches(id, launcher, entry): whether a stream entry ({id, flat fields}) matches the filter
-- of @event launcher `id` ({type, queue} JSON in its arguments).  Launcher events never match, nor
-- the job_created of a job the launcher itself created (a launcher never feeds on its own firing).
-- Returns the event's time (ms), or nil when it does not match.
--- @include "projections/lua/lib/present.lua"
local function event_matches(id, launcher, entry)
  local f = {}
  for i = 1, #entry[2], 2 do f[entry[2][i]] = entry[2][i + 1] end
  local filter = cjson.decode(launcher.arguments)
  if f.type ~= filter.type or string.sub(f.type, 1, 9) == 'launcher_' then return nil end
  if present(filter.queue) and f.queue ~= filter.queue then return nil end
  if f.type == 'job_created' and tostring(cjson.decode(f.data).launcher) == id then return nil end
  return tonumber(f.at)
end
