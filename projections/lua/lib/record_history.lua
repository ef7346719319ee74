-- record_history(id, job): apply()'s last step for an event of a job: its id appended to the job's
-- history, inline in the job hash (`h`, see history_appended.lua) while that stays short, else in the
-- job's history list: there once it outgrew the hash, for a job whose hash is gone (the list
-- outlives it), and for jobs created before histories were kept inline.  The job as the event's
-- applier read it (LOADED) saves reading `h` again: appliers never change it but through
-- history_field() (after which apply() does not call this) and forget_job() (which clears it).
--- @include "projections/lua/lib/history_appended.lua"
--- @include "projections/lua/lib/load_job.lua"
--- @include "projections/lua/lib/spill_history.lua"
local function record_history(id, job)
  local loaded, inline = LOADED[job], nil
  if loaded then inline = loaded.h else inline = redis.call('HGET', K.job(job), 'h') end
  if not inline then
    redis.call('RPUSH', K.history(job), id)
    return
  end
  local appended = history_appended(inline, id)
  if appended then
    redis.call('HSET', K.job(job), 'h', appended)
    return
  end
  spill_history(job, inline)
  redis.call('RPUSH', K.history(job), id)
  redis.call('HDEL', K.job(job), 'h')
end
