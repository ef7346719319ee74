-- release_unique(id, job): the job no longer holds its unique_key (it ended, or is gone)
local function release_unique(id, job)
  if job.unique_key and redis.call('HGET', K.queue_unique(job.queue), job.unique_key) == id then
    redis.call('HDEL', K.queue_unique(job.queue), job.unique_key)
  end
end
