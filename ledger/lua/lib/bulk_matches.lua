-- bulk_matches(id, job, f): whether the job matches a bulk operation's filter f (decoded JSON; a
-- criterion left out is absent): its queue, status (one, or a list: any of them), tag, the kind of
-- its latest error, and the time it reached its status (ended_at, else started_at, else created_at)
-- in [since, until)
local function bulk_matches(id, job, f)
  if f.queue and job.queue ~= f.queue then return false end
  if type(f.status) == 'table' then
    local any = false
    for _, status in ipairs(f.status) do any = any or job.status == status end
    if not any then return false end
  elseif f.status and job.status ~= f.status then return false end
  if f.tag and redis.call('SISMEMBER', K.tag(f.tag), id) == 0 then return false end
  if f.error_kind then
    if not job.errors then return false end
    local errors = cjson.decode(job.errors)
    local latest = errors[#errors]
    if not latest or latest.kind ~= f.error_kind then return false end
  end
  if f.since or f['until'] then
    local at = (job.ended_at or job.started_at or job.created_at) + 0
    if f.since and at < f.since then return false end
    if f['until'] and at >= f['until'] then return false end
  end
  return true
end
