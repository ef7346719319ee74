-- count_blob_refs(refs, delta, queue): the blobs that the file references `refs` (a list of
-- {sha256 = ...}) of a job of `queue` name are named `delta` more times (1 when the job gains them,
-- -1 when it drops them), in all and by that queue: a blob no longer named leaves the count (the
-- blob collector may sweep it from the store), and a queue none of whose jobs names it leaves the
-- blob's queues (who may name the blob in a new job reads them)
local function count_blob_refs(refs, delta, queue)
  for _, ref in ipairs(refs) do
    if redis.call('HINCRBY', K.blob_refs, ref.sha256, delta) <= 0 then
      redis.call('HDEL', K.blob_refs, ref.sha256)
    end
    if redis.call('HINCRBY', K.blob_queues(ref.sha256), queue, delta) <= 0 then
      redis.call('HDEL', K.blob_queues(ref.sha256), queue)
    end
  end
end
