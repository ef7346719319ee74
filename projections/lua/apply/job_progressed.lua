-- apply_job_progressed(e): the worker reports how far it got, and/or a status line
--- @include "projections/lua/lib/set_fields.lua"
local function apply_job_progressed(e)
  set_fields(K.job(e.job), e.data, {'progress', 'message'})
end
