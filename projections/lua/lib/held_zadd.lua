-- held_zadd(key, score, member): while replay holds its writes (hold_writes.lua), a ZADD of one
-- member, held; the callers write at once when HELD is false
--- @include "projections/lua/lib/hold_writes.lua"
local function held_zadd(key, score, member)
  local zsets = HELD.zsets
  local members = zsets[key]
  if not members then
    members = {}
    zsets[key] = members
  end
  members[member] = score
end
