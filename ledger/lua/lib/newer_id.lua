-- newer_id(a, b): whether stream id a ("ms-seq") comes after stream id b (any id comes after nil)
local function newer_id(a, b)
  if not b then return true end
  local a_ms, a_seq = string.match(a, '^(%d+)-?(%d*)$')
  local b_ms, b_seq = string.match(b, '^(%d+)-?(%d*)$')
  if not a_ms or not b_ms then return false end
  if tonumber(a_ms) ~= tonumber(b_ms) then return tonumber(a_ms) > tonumber(b_ms) end
  return tonumber(a_seq ~= '' and a_seq or 0) > tonumber(b_seq ~= '' and b_seq or 0)
end
