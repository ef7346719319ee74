-- apply_bulk_finished(e): the operation went through: when, and how many jobs its last run matched
local function apply_bulk_finished(e)
  redis.call('HSET', K.bulk(e.data.operation), 'finished_at', e.at, 'matched', e.data.matched)
end
