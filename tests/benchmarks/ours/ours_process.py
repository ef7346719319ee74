"""Ours: pre-enqueued no-op jobs processed to completed, as a user runs them.

Jobs are created first in batches, one ``create_jobs`` call each (the library's bulk create, what
``POST /queue/{q}/jobs`` runs), on a queue at its default settings (timeouts and expiry on).  Then
P processes each run the :class:`jobledger.worker.worker.Worker` class (``transport="redis"``,
concurrency C, an async no-op handler) until every job is done.  The grid of (P, C) is tried on a
quarter of the jobs; the best is measured again on all of them (median of the repeats); so is the
same on a queue with timeouts and expiry off, and 1 x 1 once, as each peer's is.

Beside it, never the headline: a bare loop only the benchmark uses, K processes x C threads each
running ``fetch_jobs(queue, count=B)`` then one ``update_jobs`` call for what it fetched.
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
from jobledger.worker import event_loop

from . import figures as F
from .figures import Figure, Results, Settings
from .runs import Probe, PyWorkers, RunFailed, process
from .sampling import Meter, Usage, script_calls
from .server import Servers

QUEUE = "bench"
#: The event loop the Worker runs on here, as under ``Worker.run`` (named in each figure's note).
LOOP = event_loop.loop_name()
ENQUEUE_BATCH = 500


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


def class_worker(
    ready: Any,
    go: Any,
    stop: Any,
    index: int,
    url: str,
    namespace: str,
    conc: int,
    http_url: str | None = None,
) -> None:
    """A worker process running :class:`jobledger.worker.worker.Worker` with an async no-op handler:
    over Redis, or over HTTP with the server at ``http_url``."""
    from jobledger.worker.worker import Worker

    async def noop(job: Any) -> None:
        return None

    _warm(redis.Redis.from_url(url))
    if http_url:
        worker = Worker(noop, QUEUE, concurrency=conc, url=http_url)
    else:
        worker = Worker(noop, QUEUE, concurrency=conc, transport="redis", redis_url=url, namespace=namespace)

    async def main() -> None:
        await asyncio.to_thread(go.wait)
        task = asyncio.create_task(worker.run_async())
        await asyncio.to_thread(stop.wait)
        worker.stop()
        await task

    ready.put(index)
    event_loop.run(main())  # the loop Worker.run and ``jobledger worker`` run it on


def run_once(
    servers: Servers, jobs: int, procs: int, conc: int, batch: int = 0, *, worker_class: bool = True,
    queue: QueueSettings | None = None,
) -> Run:  # fmt: skip
    """Enqueue ``jobs`` on a fresh server, then process them with the configuration given: the
    Worker class (``procs`` x ``conc``), or the bare loop (``procs`` x ``conc`` threads x ``batch``);
    on a queue at its default settings unless ``queue`` is given."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        if queue is not None:
            ledger.run(commands.put_queue(QUEUE, queue))
        with Meter(ledger.client) as enqueued:
            enqueue_pipelined(ledger, jobs)
        ns = ledger.keys.namespace
        if worker_class:
            workers = PyWorkers(class_worker, (url, ns, conc), procs)
        else:
            workers = PyWorkers(ledger_worker, (url, ns, conc, batch), procs)
        timed = process(ledger.client, workers, completed_probe(ledger.keys), jobs)
    return Run(jobs, timed.rate, enqueued.usage, timed.usage)


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


Config = tuple[int, ...]


def _grid(
    servers: Servers, settings: Settings, configs: tuple[Config, ...], worker_class: bool, log: Any
) -> dict[Config, float]:
    """Each configuration's rate on ``grid_jobs`` (a configuration that fails is left out)."""
    name = "Worker" if worker_class else "bare loop"
    tried: dict[Config, float] = {}
    for config in configs:
        try:
            tried[config] = run_once(servers, settings.grid_jobs, *config, worker_class=worker_class).rate
            log(f"  ours {name} {F.config_note(*config)}: {tried[config]:,.0f} jobs/s")
        except RunFailed as exc:
            log(f"  ours {name} {F.config_note(*config)}: failed: {exc}")
    if not tried:
        raise RunFailed(f"the {name} failed in every configuration")
    return tried


def _best(
    servers: Servers, settings: Settings, configs: tuple[Config, ...], worker_class: bool, log: Any
) -> tuple[Config, Run, dict[str, Any]]:
    """The best configuration of the grid, measured again on every job (the median of the repeats)."""
    tried = _grid(servers, settings, configs, worker_class, log)
    best = max(tried, key=lambda c: tried[c])
    runs = [
        run_once(servers, settings.jobs, *best, worker_class=worker_class) for _ in range(settings.repeats)
    ]
    grid = {F.config_note(*c): round(r) for c, r in tried.items()}
    return best, _median_run(runs), {"grid": grid, "runs": [round(r.rate) for r in runs]}


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    """The processing figures of ours: the Worker class at its best grid configuration and at 1 x 1
    (queue at its default settings), the same with timeouts and expiry off, and the bare loop."""
    best, run, tried = _best(servers, settings, settings.grid, True, log)
    note = F.config_note(*best)
    simple = run_once(servers, settings.grid_jobs, 1, 1)
    log(f"  ours Worker 1 x 1: {simple.rate:,.0f} jobs/s")
    off = QueueSettings(timeout=0, expires_after=0)
    off_runs = [run_once(servers, settings.jobs, *best, queue=off) for _ in range(settings.repeats)]
    results: Results = {
        F.PROCESS_BEST: Figure(run.rate, "jobs/s", f"Worker on {LOOP}, {note}", tried),
        F.PROCESS_1X1: Figure(
            simple.rate, "jobs/s", f"Worker on {LOOP}, {F.config_note(1, 1)} ({settings.grid_jobs:,} jobs)",
            {"cpu_us_process": round(simple.process.cpu_us_per(simple.jobs), 2),
             "script_round_trips_per_job": round(script_calls(simple.process, simple.jobs), 3)},
        ),
        F.PROCESS_OFF: Figure(
            _median_run(off_runs).rate, "jobs/s", f"Worker on {LOOP}, {note}; timeout 0s, expires_after 0s",
            {"runs": [round(r.rate) for r in off_runs]},
        ),
        F.CPU_PROCESS: Figure(
            run.process.cpu_us_per(run.jobs), "us/job", f"Worker on {LOOP}, {note}", _detail(run)
        ),
        F.CPU_LIFECYCLE: Figure((run.enqueue + run.process).cpu_us_per(run.jobs), "us/job", note),
        F.CALLS_LIFECYCLE: Figure((run.enqueue + run.process).calls_per(run.jobs), "cmds/job", note),
    }  # fmt: skip
    try:
        loop, loop_run, loop_tried = _best(servers, settings, settings.loop_grid, False, log)
        results[F.PROCESS_LOOP] = Figure(
            loop_run.rate, "jobs/s", f"fetch_jobs / update_jobs loop, {F.config_note(*loop)}",
            {**loop_tried, "cpu_us_process": round(loop_run.process.cpu_us_per(loop_run.jobs), 2)},
        )  # fmt: skip
    except RunFailed as exc:
        results[F.PROCESS_LOOP] = Figure(None, "jobs/s", f"failed: {exc}")
    return results
