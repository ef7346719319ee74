"""saq with its Redis queue: an async no-op function.

- Processing: jobs enqueued beforehand, then P processes of ``saq.Worker(concurrency=C)``, each on
  the event loop our Worker runs on (uvloop where installed); done when the queue's ``incomplete``
  set is empty.  Completed jobs are kept (saq's default ttl, 600 s).
- Bulk enqueue: none (``map`` enqueues one by one and waits for results).  One by one:
  ``await queue.enqueue("noop")``.
- Latency: subscribed to the job's updates (saq's own pub/sub, held open), the producer enqueues
  and waits for a terminal status; the worker blocks on BLMOVE.
- Retained memory: what is left after every job completed (the completed jobs, until their ttl).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import time
import uuid
from typing import Any

import redis

from jobledger.worker import event_loop
from tests.benchmarks.ours import figures as F
from tests.benchmarks.ours.figures import Figure, Results, Settings
from tests.benchmarks.ours.runs import Probe, PyWorkers, process
from tests.benchmarks.ours.sampling import Meter, sample
from tests.benchmarks.ours.server import Servers

from .common import (
    PeerRun,
    best_of_grid,
    enqueue_one_figures,
    latency_figures,
    process_figures,
)

GRID = ((1, 10), (1, 50), (2, 10), (2, 50))
WARMUP = 20
INCOMPLETE = "saq:default:incomplete"


def unavailable() -> str | None:
    if importlib.util.find_spec("saq") is None:
        return "saq is not installed (pip install '.[bench]')"
    return None


async def noop(ctx: Any) -> None:
    """The job."""


def _queue(url: str) -> Any:
    from saq import Queue

    return Queue.from_url(url)


def worker(ready: Any, go: Any, stop: Any, index: int, url: str, concurrency: int) -> None:
    """A saq worker process, started on "go", stopped on "stop"."""
    from saq import Worker

    logging.getLogger("saq").setLevel(logging.CRITICAL)  # its shutdown notices are not results

    async def main() -> None:
        queue = _queue(url)
        await queue.connect()
        w = Worker(queue, functions=[("noop", noop)], concurrency=concurrency)
        ready.put(index)
        await asyncio.to_thread(go.wait)
        task = asyncio.create_task(w.start())
        await asyncio.to_thread(stop.wait)
        await w.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await queue.disconnect()

    # on the loop our Worker runs on (uvloop where installed): saq, asyncio too, is tuned as ours is
    event_loop.run(main())


async def _enqueue(url: str, jobs: int, concurrent: int = 1) -> float:
    """Enqueue ``jobs`` jobs, ``concurrent`` at a time; the seconds it took."""
    queue = _queue(url)
    await queue.connect()
    await queue.enqueue("noop")
    start = time.perf_counter()
    for begin in range(0, jobs, concurrent):
        await asyncio.gather(*(queue.enqueue("noop") for _ in range(min(concurrent, jobs - begin))))
    seconds = time.perf_counter() - start
    await queue.disconnect()
    return seconds


def run_once(servers: Servers, jobs: int, procs: int, conc: int) -> PeerRun:
    with servers.fresh() as url:
        client = redis.Redis.from_url(url)
        with Meter(client) as enqueued:
            asyncio.run(_enqueue(url, jobs - 1, concurrent=20))
        workers = PyWorkers(worker, (url, conc), procs)
        timed = process(client, workers, Probe(("ZCARD", INCOMPLETE), lambda n: jobs - int(n)), jobs)
    return PeerRun(jobs, timed.rate, enqueued.usage, timed.usage)


def _one_by_one(servers: Servers, jobs: int) -> tuple[float, float]:
    with servers.fresh() as url, Meter(redis.Redis.from_url(url)) as meter:
        seconds = asyncio.run(_enqueue(url, jobs))
    return jobs / seconds, meter.usage.cpu_us_per(jobs)


def _memory(servers: Servers, jobs: int) -> Figure:
    with servers.fresh() as url:
        client = redis.Redis.from_url(url)
        before = sample(client).memory
        asyncio.run(_enqueue(url, jobs - 1, concurrent=20))
        process(
            client,
            PyWorkers(worker, (url, 50), 1),
            Probe(("ZCARD", INCOMPLETE), lambda n: jobs - int(n)),
            jobs,
        )
        retained = (sample(client).memory - before) / jobs
    return Figure(retained, "B/job", "completed jobs kept for saq's default ttl (600 s)")


async def _latencies(url: str, samples: int) -> list[float]:
    from saq.job import TERMINAL_STATUSES, Status

    queue = _queue(url)
    await queue.connect()
    keepalive = await queue._pubsub.subscribe("keepalive")  # holds saq's one pub/sub connection open
    await asyncio.sleep(0.2)
    out = []
    for i in range(samples + WARMUP):
        key = uuid.uuid4().hex
        updates = await queue._pubsub.subscribe(queue.job_id(key))
        start = time.perf_counter()
        await queue.enqueue("noop", key=key)
        while True:
            message = await asyncio.wait_for(updates.get(), 5)
            if Status[message["data"].decode().upper()] in TERMINAL_STATUSES:
                break
        if i >= WARMUP:
            out.append((time.perf_counter() - start) * 1000)
        await queue._pubsub.unsubscribe(updates)
    await queue._pubsub.unsubscribe(keepalive)
    await queue.disconnect()
    return out


def _latency(servers: Servers, samples: int) -> list[float]:
    with servers.fresh() as url:
        workers = PyWorkers(worker, (url, 1), 1)
        try:
            workers.wait_ready()
            workers.go()
            return asyncio.run(_latencies(url, samples))
        finally:
            workers.stop()


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    grid = GRID[:1] if settings.quick else GRID
    best, runs, tried = best_of_grid(
        lambda jobs, procs, conc: run_once(servers, jobs, procs, conc), grid, settings, "saq", log
    )
    results = process_figures(best, runs, tried)
    results[F.PROCESS_1X1] = Figure(
        run_once(servers, settings.grid_jobs, 1, 1).rate,
        "jobs/s",
        F.config_note(1, 1) + f" ({settings.grid_jobs:,} jobs, on {event_loop.loop_name()})",
    )
    results[F.ENQUEUE_BULK] = Figure(None, "jobs/s", "no bulk enqueue (map waits for results)")
    one = [_one_by_one(servers, settings.enqueue_one_jobs) for _ in range(settings.repeats)]
    results.update(enqueue_one_figures(one, "await queue.enqueue()"))
    lat = _latency(servers, settings.latency_samples)
    results.update(
        latency_figures(
            lat, f"enqueue, then its pub/sub update; worker on BLMOVE, on {event_loop.loop_name()}"
        )
    )
    results[F.MEMORY] = _memory(servers, settings.jobs)
    return results
