-- JOB_NUMBERS: a job's numeric settings: those new_job resolves into job_created's data, and its
-- applier copies into the job's hash; one list for both, built once per call (numeric for loops over
-- it: ipairs costs a call per field).  Generated from the models: the numeric job options a queue
-- setting gives the default of.
local JOB_NUMBERS = --[[ @names "job_numbers" ]] {}
