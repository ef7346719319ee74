-- history_appended(inline, id): a job's inline history with the event id `id` appended, or nil when
-- that would make it longer than HISTORY_INLINE bytes (the history then moves to its list: see
-- record_history.lua).  The inline history is the job hash's `h` field: its event ids, oldest first,
-- separated by spaces, the first as it is (`<ms>-<seq>`) and each later one as its milliseconds
-- after the one before it (`<ms - previous ms>-<seq>`).  Kept short, it stays in the hash's compact
-- encoding, where a list key of its own costs far more per job.
local HISTORY_INLINE = 60
local function history_appended(inline, id)
  -- (text in arithmetic is converted once, tonumber converts it twice)
  local ms, seq = string.match(id, '^(%d+)(%-%d+)$')
  local last = 0
  for step in string.gmatch(inline, '(%d+)%-%d+') do last = last + step end
  local appended = inline .. ' ' .. string.format('%d', ms - last) .. seq
  if #appended > HISTORY_INLINE then return nil end
  return appended
end
