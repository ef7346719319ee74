"""Ours, from a producer's side: enqueue rates (bulk and one by one) and end-to-end latency.

- Bulk: ``create_job`` calls pipelined through ``Ledger.run_many``, the best of a few batch sizes.
- One by one: ``Ledger.run(create_job)`` in a loop, one round trip each.
- Latency, one job at a time: the producer creates a job and blocks on ``XREAD`` of the ledger's
  stream until it reads that job's ``job_completed``; a worker process (fetch batch 10, pipelined
  completes) sleeps on ``XREAD BLOCK`` of the same stream when the queue is empty, so a new
  ``job_created`` wakes it at once (no polling interval in the figure).  p50 and p99 of
  create -> completion seen.
"""

from __future__ import annotations

import time
from typing import Any

import redis

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, JobUpdate
from jobledger.ledger.runner import Ledger

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_process import QUEUE, _warm, enqueue_pipelined, job_id, ledger_on
from .runs import PyWorkers
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


def latency_worker(ready: Any, go: Any, stop: Any, index: int, url: str, namespace: str) -> None:
    """Fetch and complete jobs as they come; asleep on XREAD BLOCK of the stream while none is queued."""
    client = redis.Redis.from_url(url)
    _warm(client)
    ledger = Ledger(client, namespace)
    stream = ledger.keys.events
    cursor = _last_id(client, stream)
    ready.put(index)
    go.wait()
    while not stop.is_set():
        fetched = ledger.run(commands.fetch_jobs(QUEUE, 10, "latency"))
        if fetched:
            ledger.run_many(
                [commands.update_job(f.id, JobUpdate(status="completed", attempt=f.attempt)) for f in fetched]
            )
            continue
        reply: Any = client.xread({stream: cursor}, count=1000, block=100)
        if reply:
            cursor = reply[0][1][-1][0]


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


def _latencies(ledger: Ledger, samples: int) -> list[float]:
    create = commands.create_job(QUEUE, JobOptions())
    stream = ledger.keys.events
    cursor = _last_id(ledger.client, stream)
    out: list[float] = []
    for i in range(samples + WARMUP):
        start = time.perf_counter()
        created = ledger.run(create)
        cursor = _wait_completed(ledger.client, stream, cursor, str(job_id(created)).encode())
        if i >= WARMUP:
            out.append((time.perf_counter() - start) * 1000)
    return out


def latency(servers: Servers, samples: int) -> list[float]:
    """Milliseconds from create to completion seen, one job at a time."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        workers = PyWorkers(latency_worker, (url, ledger.keys.namespace), 1)
        try:
            workers.wait_ready()
            workers.go()
            return _latencies(ledger, samples)
        finally:
            workers.stop()


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    batches = BULK_BATCHES[:1] if settings.quick else BULK_BATCHES
    tried = {b: _bulk_once(servers, settings.grid_jobs, b)[0] for b in batches}
    best = max(tried, key=lambda b: tried[b])
    log(f"  ours bulk enqueue by batch: { {b: round(r) for b, r in tried.items()} }")
    bulk = sorted(_bulk_once(servers, settings.jobs, best) for _ in range(settings.repeats))
    bulk_rate, bulk_cpu = bulk[len(bulk) // 2]
    one = sorted(_one_by_one_once(servers, settings.enqueue_one_jobs) for _ in range(settings.repeats))
    one_rate, one_cpu = one[len(one) // 2]
    lat = latency(servers, settings.latency_samples)
    note = f"{len(lat)} jobs one at a time; worker woken by XREAD"
    return {
        F.ENQUEUE_BULK: Figure(
            bulk_rate, "jobs/s", f"create_jobs, batch {best}", {"cpu_us_per_job": bulk_cpu}
        ),
        F.ENQUEUE_ONE: Figure(one_rate, "jobs/s", "one round trip each", {"cpu_us_per_job": one_cpu}),
        F.LATENCY_P50: Figure(F.percentile(lat, 50), "ms", note),
        F.LATENCY_P99: Figure(
            F.percentile(lat, 99), "ms", note, {"max": max(lat), "mean": sum(lat) / len(lat)}
        ),
    }
