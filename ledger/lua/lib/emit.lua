-- emit(now, kind, job, queue, data, actor): append one event to the ledger and apply it at once.
-- data is a table (encoded here) or a JSON string; job and queue may be nil.  Returns the event id.
-- The event's `at` is now, never less than the command's NOW (the ledger's clock, read by the
-- prelude), and the clock moves to it: `at` never decreases along the stream.
-- Its `actor` is who caused it: actor if given, else the command's ACTOR (taken off ARGV by the
-- prelude).  Appliers never see it: it is the stream's record, not a projection.
--- @include "projections/lua/apply.lua"
local function emit(now, kind, job, queue, data, actor)
  if now < NOW then now = NOW end
  local json = data
  if type(data) == 'table' then json = cjson.encode(data) end
  local id
  if job then
    id = redis.call('XADD', K.events, '*', 'type', kind, 'v', V[kind] or 1, 'at', now,
      'job', job, 'queue', queue, 'actor', actor or ACTOR, 'data', json)
  else
    id = redis.call('XADD', K.events, '*', 'type', kind, 'v', V[kind] or 1, 'at', now,
      'queue', queue, 'actor', actor or ACTOR, 'data', json)
  end
  if now > CLOCK_AT then  -- the clock moves (commands within one ms, and a batch's events, leave it)
    redis.call('SET', K.clock, now)
    CLOCK_AT = now
  end
  apply(id, kind, now, job or '', queue or '', json)
  return id
end
