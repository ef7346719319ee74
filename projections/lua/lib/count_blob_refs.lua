-- count_blob_refs(refs, delta): the blobs that the file references `refs` (a list of {sha256 = ...})
-- name are named `delta` more times (1 when a job gains them, -1 when it drops them); a blob no
-- longer named leaves the count, and the blob collector may sweep it from the store
local function count_blob_refs(refs, delta)
  for _, ref in ipairs(refs) do
    if redis.call('HINCRBY', K.blob_refs, ref.sha256, delta) <= 0 then
      redis.call('HDEL', K.blob_refs, ref.sha256)
    end
  end
end
