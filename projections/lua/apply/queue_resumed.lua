-- apply_queue_resumed(e): the queue hands out jobs again
local function apply_queue_resumed(e)
  redis.call('HDEL', K.queue(e.queue), 'paused')
end
