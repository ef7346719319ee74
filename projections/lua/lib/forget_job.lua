-- forget_job(id, job): remove every trace of the job from the projections but its history
--- @include "projections/lua/lib/leave_place.lua"
--- @include "projections/lua/lib/release_unique.lua"
--- @include "projections/lua/lib/track_pending.lua"
local function forget_job(id, job)
  leave_place(id, job)
  release_unique(id, job)
  track_pending(id, job.launcher, false)
  if job.tags then
    for _, tag in ipairs(cjson.decode(job.tags)) do redis.call('SREM', K.tag(tag), id) end
  end
  redis.call('DEL', K.job(id))
end
