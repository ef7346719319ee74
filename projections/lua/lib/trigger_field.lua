-- trigger_field(d): the launcher hash's field that holds the last event an @event launcher acted on
-- from the stream the event `d` (launcher_fired, _skipped, _triggered) names: `last_trigger` for its
-- own partition's stream (and on a ledger of one partition), `last_trigger:<p>` for partition p's
-- of a split ledger (ids of different streams do not compare)
--- @include "projections/lua/lib/present.lua"
local function trigger_field(d)
  if present(d.source) then return 'last_trigger:' .. d.source end
  return 'last_trigger'
end
