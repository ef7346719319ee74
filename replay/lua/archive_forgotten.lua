-- archive_forgotten: retention.  Which of the jobs ARGV[2..] (those of a segment being archived) the
-- archive trim up to ARGV[1] removes from Redis (archived_history), with their history lists: what
-- the archiver writes into the archive's job index before it trims.  Reads only.
-- KEYS[1] namespace prefix
-- ARGV[1] the segment's last id   ARGV[2..] job ids
-- returns a flat list: job id, then its history list (a list of event ids), for each such job
--- @include "projections/lua/lib/drop_archived_history.lua"
local out = {}
for i = 2, #ARGV do
  local ids = archived_history(ARGV[i], ARGV[1])
  if ids then
    out[#out + 1] = ARGV[i]
    out[#out + 1] = ids
  end
end
return out
