-- apply_job_result_added(e): the job's results (a JSON list in its record, in the order they were
-- first added) gain the event's file; one of the same name is replaced, and its blob is named once less
--- @include "projections/lua/lib/count_blob_refs.lua"
local function apply_job_result_added(e)
  local d, key = e.data, K.job(e.job)
  local raw = redis.call('HGET', key, 'results')
  local results = raw and cjson.decode(raw) or {}
  local entry = {name = d.name, sha256 = d.sha256, size = d.size, media_type = d.media_type,
    attempt = d.attempt, at = e.at}
  local at = #results + 1
  for i, result in ipairs(results) do
    if result.name == d.name then
      count_blob_refs({result}, -1, e.queue)
      at = i
      break
    end
  end
  results[at] = entry
  count_blob_refs({entry}, 1, e.queue)
  redis.call('HSET', key, 'results', cjson.encode(results))
end
