-- enter_queue(id, job, at): put the job at the back of its priority in its queue (higher priority
-- first, then first in, first out: the score is (100 - priority) * 2^40 + a growing sequence
-- number), and start its max_queued_time clock
local function enter_queue(id, job, at)
  local seq = redis.call('INCR', K.seq)
  local priority = tonumber(job.priority or 0)
  redis.call('HSET', K.job(id), 'status', 'queued')
  redis.call('ZADD', K.queue_jobs(job.queue), (100 - priority) * 1099511627776 + seq, id)
  if job.max_queued_time then redis.call('ZADD', K.due_queued, at + tonumber(job.max_queued_time), id) end
end
