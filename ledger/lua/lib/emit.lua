-- emit(now, kind, job, queue, data): append one event to the ledger and apply it at once.
-- data is a table (encoded here) or a JSON string; job and queue may be nil.  Returns the event id.
--- @include "projections/lua/apply.lua"
local function emit(now, kind, job, queue, data)
  local json = data
  if type(data) == 'table' then json = cjson.encode(data) end
  local id
  if job then
    id = redis.call('XADD', K.events, '*', 'type', kind, 'v', V[kind], 'at', now,
      'job', job, 'queue', queue, 'data', json)
  else
    id = redis.call('XADD', K.events, '*', 'type', kind, 'v', V[kind], 'at', now,
      'queue', queue, 'data', json)
  end
  apply(id, kind, now, job or '', queue or '', json)
  return id
end
