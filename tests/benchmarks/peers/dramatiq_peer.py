"""dramatiq with its Redis broker: a no-op actor, default middleware, ``max_retries=0``.

- Processing: messages sent one by one beforehand (dramatiq has no bulk send), then P processes of
  ``dramatiq.Worker(worker_threads=T)`` (which prefetches 2 x T messages per fetch); done when the
  queue's message hash is empty (a message leaves it when acked).
- Bulk enqueue: none (``group`` sends one by one).  One by one: ``actor.send()``.
- Latency: the Results middleware with the Redis backend; the producer sends and blocks on
  ``message.get_result(block=True)``; the worker polls with ``worker_timeout`` 1 ms (its best).
- Retained memory: what is left after every message was processed (dramatiq deletes acked ones).
"""

from __future__ import annotations

import importlib.util
import time
from typing import Any

import redis

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

GRID = ((1, 8), (1, 32), (2, 8), (2, 32))
QUEUE = "default"
WARMUP = 20


def unavailable() -> str | None:
    if importlib.util.find_spec("dramatiq") is None:
        return "dramatiq is not installed (pip install '.[bench]')"
    return None


def noop() -> None:
    """The job."""


def _actor(url: str, results: bool = False) -> Any:
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    broker = RedisBroker(url=url)
    if results:
        from dramatiq.results import Results
        from dramatiq.results.backends import RedisBackend

        broker.add_middleware(Results(backend=RedisBackend(url=url)))
    dramatiq.set_broker(broker)
    options: dict[str, Any] = {"store_results": True} if results else {}
    decorate = dramatiq.actor(broker=broker, actor_name="noop", max_retries=0, **options)
    return decorate(noop)


def worker(
    ready: Any, go: Any, stop: Any, index: int, url: str, threads: int, timeout: int, results: bool
) -> None:
    """A dramatiq worker process, started on "go", stopped on "stop"."""
    import dramatiq

    actor = _actor(url, results)
    ready.put(index)
    go.wait()
    w = dramatiq.Worker(actor.broker, worker_threads=threads, worker_timeout=timeout)
    w.start()
    stop.wait()
    w.stop()


def _pending(client: redis.Redis) -> int:
    return int(client.hlen(f"dramatiq:{QUEUE}.msgs"))


def run_once(servers: Servers, jobs: int, procs: int, threads: int) -> PeerRun:
    with servers.fresh() as url:
        client = redis.Redis.from_url(url)
        actor = _actor(url)
        actor.broker.declare_queue(QUEUE)
        with Meter(client) as enqueued:
            for _ in range(jobs):
                actor.send()
        workers = PyWorkers(worker, (url, threads, 100, False), procs)
        probe = Probe(("HLEN", f"dramatiq:{QUEUE}.msgs"), lambda n: jobs - int(n))
        timed = process(client, workers, probe, jobs)
        actor.broker.close()
    return PeerRun(jobs, timed.rate, enqueued.usage, timed.usage)


def _one_by_one(servers: Servers, jobs: int) -> tuple[float, float]:
    with servers.fresh() as url:
        actor = _actor(url)
        actor.send()
        with Meter(redis.Redis.from_url(url)) as meter:
            start = time.perf_counter()
            for _ in range(jobs):
                actor.send()
            rate = jobs / (time.perf_counter() - start)
        actor.broker.close()
    return rate, meter.usage.cpu_us_per(jobs)


def _memory(servers: Servers, jobs: int) -> Figure:
    with servers.fresh() as url:
        client = redis.Redis.from_url(url)
        actor = _actor(url)
        actor.broker.declare_queue(QUEUE)
        before = sample(client).memory
        for _ in range(jobs):
            actor.send()
        workers = PyWorkers(worker, (url, 8, 100, False), 1)
        process(client, workers, Probe(("HLEN", f"dramatiq:{QUEUE}.msgs"), lambda n: jobs - int(n)), jobs)
        retained = (sample(client).memory - before) / jobs
        actor.broker.close()
    return Figure(retained, "B/job", "acked messages are deleted; nothing kept")


def _latency(servers: Servers, samples: int) -> list[float]:
    with servers.fresh() as url:
        actor = _actor(url, results=True)
        workers = PyWorkers(worker, (url, 1, 1, True), 1)
        try:
            workers.wait_ready()
            workers.go()
            out = []
            for i in range(samples + WARMUP):
                start = time.perf_counter()
                actor.send().get_result(block=True, timeout=5000)
                if i >= WARMUP:
                    out.append((time.perf_counter() - start) * 1000)
            return out
        finally:
            workers.stop()
            actor.broker.close()


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    grid = GRID[:1] if settings.quick else GRID
    best, runs, tried = best_of_grid(
        lambda jobs, procs, conc: run_once(servers, jobs, procs, conc), grid, settings, "dramatiq", log
    )
    results = process_figures(best, runs, tried)
    results[F.PROCESS_1X1] = Figure(
        run_once(servers, settings.grid_jobs, 1, 1).rate,
        "jobs/s",
        F.config_note(1, 1) + f" ({settings.grid_jobs:,} jobs)",
    )
    results[F.ENQUEUE_BULK] = Figure(None, "jobs/s", "no bulk enqueue (group sends one by one)")
    one = [_one_by_one(servers, settings.enqueue_one_jobs) for _ in range(settings.repeats)]
    results.update(enqueue_one_figures(one, "actor.send()"))
    lat = _latency(servers, settings.latency_samples)
    results.update(latency_figures(lat, "send + get_result(block); worker_timeout 1 ms"))
    results[F.MEMORY] = _memory(servers, settings.jobs)
    return results
