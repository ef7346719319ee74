-- count_bulk(e): a job event that a bulk operation appended (its data names the operation) counts
-- in that operation's record, in the job's partition
local function count_bulk(e)
  local operation = e.data.operation
  if operation then redis.call('HINCRBY', K.bulk(operation), 'done', 1) end
end
