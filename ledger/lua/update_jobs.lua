-- update_jobs: many PATCH /job/{id} in one call (a worker finishing a batch of jobs): each update
-- exactly as update_job makes it (ledger/lua/lib/update.lua) and checked on its own: a refused one
-- appends nothing, and the others go on.
-- KEYS[1] namespace prefix
-- ARGV[1] now (ms)   ARGV[2..] six values per update, as update_job's ARGV[2..7]
-- returns per update: the number of events appended, or the refusal as text "CODE message"
--- @include "ledger/lua/lib/update.lua"
local now = tonumber(ARGV[1])
local REFUSALS = {NOT_FOUND = true, CONFLICT = true, BAD_REQUEST = true}
local results = {}
for i = 2, #ARGV, 6 do
  local ok, result = pcall(update, now, ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5])
  -- pcall hands refuse()'s error over as its text (or, on some servers, as the {err = text} table)
  local text = (not ok) and (type(result) == 'table' and result.err or tostring(result)) or nil
  if ok then
    results[#results + 1] = result
  elseif REFUSALS[string.match(text, '^(%S+)')] then
    results[#results + 1] = text  -- refused before its first event: it changed nothing
  else
    error(result, 0)  -- a fault, not a refusal: stop, as update_job would
  end
end
return results
