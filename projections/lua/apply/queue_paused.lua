-- apply_queue_paused(e): the queue takes jobs but hands none out
local function apply_queue_paused(e)
  redis.call('HSET', K.queue(e.queue), 'paused', '1')
end
