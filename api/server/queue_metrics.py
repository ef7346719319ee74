"""The per-queue metric families of ``/metrics``: jobs by status now, lifetime counts of what happened
to the queue's jobs, the wait and run time histograms, and the age of the oldest queued job.

The counts and histograms come from each queue's totals (:mod:`jobledger.projections.queue_totals`),
which the ledger's appliers keep: they count every server's and every worker's jobs, survive expiry
and restarts, and only grow (a queue deleted and made again carries on from where it was).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from jobledger.projections.queue_totals import OUTCOMES, Histogram, QueueTotals

#: Each lifetime count's metric (``jobledger_jobs_<outcome>_total``) says what it counts.
OUTCOME_HELP = {
    "created": "Jobs created in the queue.",
    "started": "Attempts started: a worker took a job of the queue.",
    "completed": "Attempts that ended completed.",
    "failed": "Attempts that failed (retried or not).",
    "timed_out": "Attempts, or waits in the queue, that timed out (retried or not).",
    "cancelled": "Jobs cancelled.",
    "expired": "Ended jobs that expired (left the projections; their history stays).",
    "returned": "Running jobs a stopping worker handed back to the queue.",
}


def job_families(
    jobs: dict[str, dict[str, int]],
    totals: dict[str, QueueTotals],
    oldest_ms: dict[str, int | None],
    now_ms: int,
) -> Iterator[Metric]:
    """Every per-queue family, for the queues named in ``jobs`` (the queues that exist)."""
    now = GaugeMetricFamily("jobledger_jobs", "Jobs by queue and status now.", labels=["queue", "status"])
    for queue, counts in jobs.items():
        for status, count in counts.items():
            now.add_metric([queue, status], count)
    yield now
    yield from _outcome_families(totals)
    yield _histogram_family(
        "jobledger_job_wait_seconds",
        "Time from joining the queue (created, released, retried or handed back) to starting.",
        {queue: t.wait for queue, t in totals.items()},
    )
    yield _histogram_family(
        "jobledger_job_run_seconds",
        "Time from starting to stopping (completed, failed, timed out or cancelled while running).",
        {queue: t.run for queue, t in totals.items()},
    )
    age = GaugeMetricFamily(
        "jobledger_oldest_queued_job_age_seconds",
        "How long the queue's oldest queued job has waited (0 when none is queued).",
        labels=["queue"],
    )
    for queue, joined in oldest_ms.items():
        age.add_metric([queue], 0.0 if joined is None else max(now_ms - joined, 0) / 1000)
    yield age


def _outcome_families(totals: dict[str, QueueTotals]) -> Iterator[Metric]:
    for outcome in OUTCOMES:
        family = CounterMetricFamily(f"jobledger_jobs_{outcome}", OUTCOME_HELP[outcome], labels=["queue"])
        for queue, counted in totals.items():
            family.add_metric([queue], counted.outcomes[outcome])
        yield family


def _histogram_family(name: str, documentation: str, by_queue: dict[str, Histogram]) -> Metric:
    family = HistogramMetricFamily(name, documentation, labels=["queue"])
    for queue, histogram in by_queue.items():
        buckets = [(floatToGoString(bound), count) for bound, count in histogram.cumulative()]
        family.add_metric([queue], buckets, histogram.sum_ms / 1000)
    return family
