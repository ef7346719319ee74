"""Ours: pre-enqueued no-op jobs processed to completed through the Python library.

Jobs are created first in batches, one ``create_jobs`` call each (the library's bulk create, what
``POST /queue/{q}/jobs`` runs).  Then K worker processes x C threads each loop straight on the
ledger: ``fetch_jobs(queue, count=B, worker)``, then one ``update_jobs`` call completing every job
fetched (a single job is completed with ``update_job``), until the queue is empty.  A small grid of
(K, C, B) is tried on a quarter of the jobs; the best is measured again on all of them (median of
the repeats), and so is the simplest worker: 1 x 1, batch 1.

A second row runs the real :class:`jobledger.worker.worker.Worker` (``transport="redis"``, an async no-op
handler) the same way, for what a user of the worker class gets.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.scripts import sources

from . import figures as F
from .figures import Figure, Results, Settings
from .runs import Probe, PyWorkers, RunFailed, process
from .sampling import Meter, Usage, script_calls
from .server import Servers

QUEUE = "bench"
ENQUEUE_BATCH = 500
#: (procs, concurrency) of the worker class; at most 100 in flight per process (redis-py's asyncio
#: pool holds 100 connections, and RedisTransport runs each job's update on a connection of its own).
WORKER_CLASS_GRID = ((1, 32), (2, 32), (2, 64))


@dataclass(frozen=True)
class Run:
    """One processing run: its rate, and the server's spending on enqueue and on processing."""

    jobs: int
    rate: float
    enqueue: Usage
    process: Usage


@contextmanager
def ledger_on(servers: Servers, url: str) -> Iterator[Ledger]:
    """A ledger with the bench queue; on a shared server, a namespace of its own, dropped after."""
    namespace = "bench" if servers.isolated else "bench-" + uuid.uuid4().hex[:8]
    client = redis.Redis.from_url(url)
    ledger = Ledger(client, namespace)
    ledger.run(commands.put_queue(QUEUE, QueueSettings()))
    try:
        yield ledger
    finally:
        if not servers.isolated:
            drop(client, ledger.keys)
        client.close()


def drop(client: redis.Redis, keys: Keys) -> None:
    """Delete every key of a namespace."""
    batch: list[Any] = []
    for key in client.scan_iter(match=keys.pattern(), count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            client.unlink(*batch)
            batch = []
    if batch:
        client.unlink(*batch)


def enqueue_pipelined(ledger: Ledger, jobs: int, batch: int = ENQUEUE_BATCH) -> list[int]:
    """Create ``jobs`` no-op jobs, ``batch`` per ``create_jobs`` call; their ids."""
    ids: list[int] = []
    for start in range(0, jobs, batch):
        made = ledger.run(commands.create_jobs(QUEUE, [JobOptions()] * min(batch, jobs - start)))
        ids += [job_id(c) for c in made]
    return ids


def job_id(created: Any) -> int:
    """The id in ``create_job``'s answer (a ``Created``, or a bare id from older code)."""
    if isinstance(created, Exception):
        raise created
    return int(getattr(created, "id", created))


def completed_probe(keys: Keys) -> Probe:
    return Probe(("ZCARD", keys.queue_status(QUEUE, "completed")), int)


def _warm(client: redis.Redis) -> None:
    """Load every script, so no worker pays a NOSCRIPT round trip inside the timed part."""
    for source in sources().values():
        client.script_load(source)


def _drain(ledger: Ledger, worker: str, batch: int, stop: Any) -> None:
    while not stop.is_set():
        fetched = ledger.run(commands.fetch_jobs(QUEUE, batch, worker))
        if not fetched:
            return
        done = [(f.id, JobUpdate(status="completed", attempt=f.attempt)) for f in fetched]
        if len(done) == 1:
            ledger.run(commands.update_job(*done[0]))
            continue
        for outcome in ledger.run(commands.update_jobs(done)):
            if isinstance(outcome, Exception):
                raise outcome


def ledger_worker(
    ready: Any, go: Any, stop: Any, index: int, url: str, namespace: str, threads: int, batch: int
) -> None:
    """A worker process: ``threads`` threads fetching ``batch`` at a time, completing them pipelined."""
    client = redis.Redis.from_url(url)
    _warm(client)
    ledger = Ledger(client, namespace)

    def drain(worker: str) -> None:
        go.wait()
        _drain(ledger, worker, batch, stop)

    workers = [threading.Thread(target=drain, args=(f"w{index}-{t}",)) for t in range(threads)]
    for thread in workers:
        thread.start()
    ready.put(index)
    for thread in workers:
        thread.join()


def class_worker(ready: Any, go: Any, stop: Any, index: int, url: str, namespace: str, conc: int) -> None:
    """A worker process running :class:`jobledger.worker.worker.Worker` with an async no-op handler."""
    from jobledger.worker.worker import Worker

    async def noop(job: Any) -> None:
        return None

    _warm(redis.Redis.from_url(url))
    worker = Worker(noop, QUEUE, concurrency=conc, transport="redis", redis_url=url, namespace=namespace)

    async def main() -> None:
        await asyncio.to_thread(go.wait)
        task = asyncio.create_task(worker.run_async())
        await asyncio.to_thread(stop.wait)
        worker.stop()
        await task

    ready.put(index)
    asyncio.run(main())


def run_once(
    servers: Servers, jobs: int, procs: int, conc: int, batch: int, worker_class: bool = False
) -> Run:
    """Enqueue ``jobs`` on a fresh server, then process them with the configuration given."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        with Meter(ledger.client) as enqueued:
            enqueue_pipelined(ledger, jobs)
        ns = ledger.keys.namespace
        if worker_class:
            workers = PyWorkers(class_worker, (url, ns, conc), procs)
        else:
            workers = PyWorkers(ledger_worker, (url, ns, conc, batch), procs)
        timed = process(ledger.client, workers, completed_probe(ledger.keys), jobs)
    return Run(jobs, jobs / timed.seconds, enqueued.usage, timed.usage)


def _median_run(runs: list[Run]) -> Run:
    return sorted(runs, key=lambda r: r.rate)[len(runs) // 2]


def _detail(run: Run) -> dict[str, Any]:
    total = run.enqueue + run.process
    return {
        "cpu_us_enqueue": round(run.enqueue.cpu_us_per(run.jobs), 2),
        "cpu_us_process": round(run.process.cpu_us_per(run.jobs), 2),
        "calls_enqueue": round(run.enqueue.calls_per(run.jobs), 2),
        "calls_process": round(run.process.calls_per(run.jobs), 2),
        "script_round_trips_per_job": round(script_calls(total, run.jobs), 3),
        "commands_process": run.process.breakdown(run.jobs),
        "commands_enqueue": run.enqueue.breakdown(run.jobs, top=6),
    }


def _grid(servers: Servers, settings: Settings, log: Any) -> dict[tuple[int, int, int], float]:
    """Each grid configuration's rate on ``grid_jobs`` (a configuration that fails is left out)."""
    tried: dict[tuple[int, int, int], float] = {}
    for config in settings.grid:
        try:
            tried[config] = run_once(servers, settings.grid_jobs, *config).rate
            log(f"  ours grid {F.config_note(*config)}: {tried[config]:,.0f} jobs/s")
        except RunFailed as exc:
            log(f"  ours grid {F.config_note(*config)}: failed: {exc}")
    if not tried:
        raise RunFailed("every configuration of the grid failed")
    return tried


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    """The processing figures of ours: best grid configuration, 1 x 1, and the worker class."""
    tried = _grid(servers, settings, log)
    best = max(tried, key=lambda c: tried[c])
    best_runs = [run_once(servers, settings.jobs, *best) for _ in range(settings.repeats)]
    run = _median_run(best_runs)
    simple = _median_run([run_once(servers, settings.jobs, 1, 1, 1) for _ in range(settings.repeats)])
    note = F.config_note(*best)
    grid = {F.config_note(*c): round(r) for c, r in tried.items()}
    results: Results = {
        F.PROCESS_BEST: Figure(
            run.rate, "jobs/s", note, {"grid": grid, "runs": [round(r.rate) for r in best_runs]}
        ),
        F.PROCESS_1X1: Figure(simple.rate, "jobs/s", F.config_note(1, 1, 1)),
        F.CPU_PROCESS: Figure(run.process.cpu_us_per(run.jobs), "us/job", note, _detail(run)),
        F.CPU_LIFECYCLE: Figure((run.enqueue + run.process).cpu_us_per(run.jobs), "us/job", note),
        F.CALLS_LIFECYCLE: Figure((run.enqueue + run.process).calls_per(run.jobs), "cmds/job", note),
    }
    try:
        results[F.PROCESS_WORKER] = _worker_class(servers, settings, log)
    except RunFailed as exc:
        results[F.PROCESS_WORKER] = Figure(None, "jobs/s", f"failed: {exc}")
    return results


def _worker_class(servers: Servers, settings: Settings, log: Any) -> Figure:
    grid = WORKER_CLASS_GRID[:1] if settings.quick else WORKER_CLASS_GRID
    rates = {}
    for procs, conc in grid:
        try:
            rates[(procs, conc)] = run_once(
                servers, settings.grid_jobs, procs, conc, 0, worker_class=True
            ).rate
            log(f"  ours Worker class {F.config_note(procs, conc)}: {rates[(procs, conc)]:,.0f} jobs/s")
        except RunFailed as exc:
            log(f"  ours Worker class {F.config_note(procs, conc)}: failed: {exc}")
    if not rates:
        raise RunFailed("the worker class failed in every configuration")
    procs, conc = max(rates, key=lambda k: rates[k])
    runs = [run_once(servers, settings.jobs, procs, conc, 0, True) for _ in range(settings.repeats)]
    run = _median_run(runs)
    detail = {
        "cpu_us_process": run.process.cpu_us_per(run.jobs),
        "grid": {F.config_note(*k): round(v) for k, v in rates.items()},
    }
    return Figure(run.rate, "jobs/s", F.config_note(procs, conc), detail)
