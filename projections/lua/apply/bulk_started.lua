-- apply_bulk_started(e): the operation's record, under the event's id (the operation's id): its
-- action, its filter (the event's data) and queue, and when it started
local function apply_bulk_started(e)
  redis.call('HSET', K.bulk(e.id), 'action', e.data.action, 'spec', cjson.encode(e.data), 'queue', e.queue,
    'started_at', e.at)
end
