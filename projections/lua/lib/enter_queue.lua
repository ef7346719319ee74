-- enter_queue(id, job): put the job at the back of its priority in its queue (higher priority first,
-- then first in, first out: the score is (100 - priority) * 2^40 + an ever-growing sequence number)
local function enter_queue(id, job)
  local seq = redis.call('INCR', K.seq)
  local priority = tonumber(job.priority or 0)
  redis.call('ZADD', K.queue_jobs(job.queue), (100 - priority) * 1099511627776 + seq, id)
end
