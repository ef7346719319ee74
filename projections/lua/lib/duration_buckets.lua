-- DURATION_BUCKETS: the upper bounds (ms, smallest first) of the buckets of the wait and run time
-- histograms kept in each queue's totals; a duration above the last one counts in 'inf'.  Declared
-- here once: the reader of the totals (jobledger.projections.queue_totals) takes the bounds from
-- this file, so that a histogram's buckets are always those its appliers counted in.
local DURATION_BUCKETS = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000,
  900000, 3600000, 14400000, 86400000}
