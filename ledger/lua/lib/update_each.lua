-- update_each(now, args, from): the updates packed six values each in args from index from (as
-- update_job's ARGV[2..7]), each made by update() (ledger/lua/lib/update.lua) and checked on its
-- own: a refused one appends nothing, and the others go on.  Returns per update the number of
-- events appended, or the refusal as text "CODE message"; a fault (not a refusal) is raised.
--- @include "ledger/lua/lib/update.lua"
-- pcall hands refuse()'s error over as its text (or, on some servers, as the {err = text} table)
local function refusal_text(result)
  return type(result) == 'table' and result.err or tostring(result)
end

local function refused(result)
  local text = refusal_text(result)
  -- (the codes compared in turn: a table of them would be built at every call, refusal or not)
  local code = string.match(text, '^(%S+)')
  if code == 'NOT_FOUND' or code == 'CONFLICT' or code == 'BAD_REQUEST' then return text end
  return nil
end

local function update_each(now, args, from)
  local results = {}
  for i = from, #args, 6 do
    local ok, result = pcall(update, now, args[i], args[i + 1], args[i + 2], args[i + 3], args[i + 4], args[i + 5])
    if ok then
      results[#results + 1] = result
    else
      local text = refused(result)
      if not text then error(result, 0) end  -- a fault, not a refusal: stop, as update_job would
      results[#results + 1] = text  -- refused before its first event: it changed nothing
    end
  end
  return results
end
