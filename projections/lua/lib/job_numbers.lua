-- JOB_NUMBERS: a job's numeric settings: those new_job resolves into job_created's data, and its
-- applier copies into the job's hash; one list for both, built once per call (numeric for loops over
-- it: ipairs costs a call per field)
local JOB_NUMBERS = {'timeout', 'heartbeat_timeout', 'expires_after', 'retries', 'priority', 'max_queued_time'}
