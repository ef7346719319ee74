-- spill_history(id, inline): move a job's inline history (the `h` field, see history_appended.lua)
-- to its history list, which outlives the job and has no length limit; the caller removes the field
-- (or the whole hash)
local function spill_history(id, inline)
  local ids, ms = {}, nil
  for step, seq in string.gmatch(inline, '(%d+)%-(%d+)') do
    ms = (ms or 0) + tonumber(step)
    ids[#ids + 1] = string.format('%d', ms) .. '-' .. seq
  end
  redis.call('RPUSH', K.history(id), unpack(ids))
end
