"""Ours, from a producer's side: enqueue rates (bulk and one by one), and how a producer sees a
job end (the latency itself, with the Worker class, is :mod:`tests.benchmarks.ours.worker_latency`'s).

- Bulk: ``create_jobs`` calls, the best of a few batch sizes.
- One by one: ``Ledger.run(create_job)`` in a loop, one round trip each; its rate and the server's
  CPU per job.
- Seeing a job end: the producer blocks on ``XREAD`` of the ledger's stream until it reads that
  job's ``job_completed`` (:func:`_wait_completed`).
"""

from __future__ import annotations

import time
from typing import Any

import redis

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_process import QUEUE, enqueue_pipelined, ledger_on
from .sampling import Meter
from .server import Servers

BULK_BATCHES = (100, 500, 2000)
WARMUP = 20


def _bulk_once(servers: Servers, jobs: int, batch: int) -> tuple[float, float]:
    """(jobs/s, server µs per job) of one pipelined enqueue on a fresh server."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger, Meter(ledger.client) as meter:
        start = time.perf_counter()
        enqueue_pipelined(ledger, jobs, batch)
        rate = jobs / (time.perf_counter() - start)
    return rate, meter.usage.cpu_us_per(jobs)


def _one_by_one_once(servers: Servers, jobs: int) -> tuple[float, float]:
    with servers.fresh() as url, ledger_on(servers, url) as ledger, Meter(ledger.client) as meter:
        create = commands.create_job(QUEUE, JobOptions())
        ledger.run(create)
        start = time.perf_counter()
        for _ in range(jobs - 1):
            ledger.run(create)
        rate = (jobs - 1) / (time.perf_counter() - start)
    return rate, meter.usage.cpu_us_per(jobs)


def _last_id(client: redis.Redis, stream: str) -> bytes:
    newest: Any = client.xrevrange(stream, count=1)
    return newest[0][0] if newest else b"0-0"


def _wait_completed(client: redis.Redis, stream: str, cursor: bytes, job: bytes) -> bytes:
    """Block on the stream from ``cursor`` until ``job``'s job_completed; the new cursor."""
    while True:
        reply: Any = client.xread({stream: cursor}, count=1000, block=5000)
        if not reply:
            raise TimeoutError(f"job {job!r} not completed within 5s")
        for entry_id, fields in reply[0][1]:
            cursor = entry_id
            if fields.get(b"type") == b"job_completed" and fields.get(b"job") == job:
                return cursor


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    batches = BULK_BATCHES[:1] if settings.quick else BULK_BATCHES
    tried = {b: _bulk_once(servers, settings.grid_jobs, b)[0] for b in batches}
    best = max(tried, key=lambda b: tried[b])
    log(f"  ours bulk enqueue by batch: { {b: round(r) for b, r in tried.items()} }")
    bulk = sorted(_bulk_once(servers, settings.jobs, best) for _ in range(settings.repeats))
    bulk_rate, bulk_cpu = bulk[len(bulk) // 2]
    one = sorted(_one_by_one_once(servers, settings.enqueue_one_jobs) for _ in range(settings.repeats))
    one_rate, one_cpu = one[len(one) // 2]
    return {
        F.ENQUEUE_BULK: Figure(
            bulk_rate, "jobs/s", f"create_jobs, batch {best}", {"cpu_us_per_job": bulk_cpu}
        ),
        F.ENQUEUE_ONE: Figure(one_rate, "jobs/s", "one round trip each", {"cpu_us_per_job": one_cpu}),
        F.ENQUEUE_ONE_CPU: Figure(one_cpu, "us/job", "create_job, one round trip each"),
    }
