-- forget_job(id, job): remove every trace of the job from the projections but its history, which
-- moves to the job's history list if it was inline in the hash; the blobs of its files and results
-- are named once less each (by its queue too)
--- @include "projections/lua/lib/count_blob_refs.lua"
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/spill_history.lua"
--- @include "projections/lua/lib/release_unique.lua"
--- @include "projections/lua/lib/track_pending.lua"
local function forget_job(id, job)
  leave_place(id, job)
  release_unique(id, job)
  track_pending(id, job.launcher, false)
  if job.tags then
    for _, tag in ipairs(cjson.decode(job.tags)) do redis.call('SREM', K.tag(tag), id) end
  end
  if job.files then count_blob_refs(cjson.decode(job.files), -1, job.queue) end
  if job.results then count_blob_refs(cjson.decode(job.results), -1, job.queue) end
  if job.h then
    spill_history(id, job.h)
    job.h = nil
  end
  redis.call('DEL', K.job(id))
end
