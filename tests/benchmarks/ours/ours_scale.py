"""Ours at scale: memory per ended job, the scheduler's check, fetch past quotas, replay.

- Memory: jobs kept forever (``expires_after`` 0s) created, fetched and completed; ``used_memory``
  after, less before, per job: the job hash, its history list, its index entries and its three
  events in the stream, all included.  The detail splits it by kind of key (``MEMORY USAGE``).
- Scheduler: the timeout check as the scheduler runs it (``jobledger.scheduler.loop.check``: one read of the
  deadline set, then ``check_timeouts(500)`` only if something is due) timed with 10 and with 100,000
  running jobs, none due (median of many, and the server's own µs per check from commandstats; the
  detail also gives the script's own server µs, had it run).
- Quotas: ``fetch_jobs`` of one free job behind 10 and 100,000 jobs held back by their quota key
  (``max_running_per_key`` 1, the key's one slot taken).  When fetch does not honour quotas yet,
  the figure says so instead of timing something else.
- Replay: a ledger of at least 1,000,000 events (create, start, complete: three per job, built
  with pipelined commands) rebuilt into an empty namespace by :func:`jobledger.replay.rebuild.rebuild`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import redis

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.replay.rebuild import rebuild
from jobledger.scheduler.loop import check as scheduler_check

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_process import QUEUE, _warm, drop, enqueue_pipelined, job_id, ledger_on
from .sampling import Meter, sample
from .server import Servers

BATCH = 1000
SMALL = 10


def start_all(ledger: Ledger, queue: str = QUEUE, batch: int = BATCH) -> list[commands.Fetched]:
    """Fetch every queued job of ``queue``, ``batch`` per call."""
    out: list[commands.Fetched] = []
    while fetched := ledger.run(commands.fetch_jobs(queue, batch, "bench")):
        out += fetched
    return out


def complete_all(ledger: Ledger, fetched: list[commands.Fetched], batch: int = BATCH) -> None:
    for start in range(0, len(fetched), batch):
        ledger.run_many(
            [commands.update_job(f.id, JobUpdate(status="completed", attempt=f.attempt))
             for f in fetched[start : start + batch]]
        )  # fmt: skip


def _by_kind(client: redis.Redis, keys: Keys, jobs: int) -> dict[str, float]:
    kinds: dict[str, int] = {}
    for raw in client.scan_iter(match=keys.pattern(), count=1000):
        kind = raw.decode()[len(keys.prefix) :].split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + int(client.memory_usage(raw, samples=0) or 0)
    return {k: round(v / jobs, 1) for k, v in sorted(kinds.items())}


def memory(servers: Servers, jobs: int) -> Figure:
    """Bytes retained per ended job, its events included."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        ledger.run(commands.put_queue(QUEUE, QueueSettings(expires_after=0)))
        _warm(ledger.client)
        before = sample(ledger.client).memory
        enqueue_pipelined(ledger, jobs)
        complete_all(ledger, start_all(ledger))
        after = sample(ledger.client).memory
        detail = {"by_key_kind": _by_kind(ledger.client, ledger.keys, jobs)}
    return Figure((after - before) / jobs, "B/job", f"{jobs} completed jobs kept (expires_after 0s)", detail)


def _median_us(runs: int, call: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e6)
    return F.median(times)


def _check_time(servers: Servers, running: int, runs: int) -> tuple[float, float, float]:
    """(median µs, server µs per check) of the scheduler's timeout check as it runs it (a read of
    the deadline set, the check_timeouts(500) script only when something is due), and the server
    µs of the script alone, with ``running`` jobs running, none due."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        enqueue_pipelined(ledger, running)
        start_all(ledger)
        if scheduler_check(ledger, "timeouts", 500):
            raise RuntimeError("a job was due: the check would not be the idle check it should be")
        with Meter(ledger.client) as meter:
            wall = _median_us(runs, lambda: scheduler_check(ledger, "timeouts", 500))
        server = sum(meter.usage.usec.values()) / runs
        script = commands.check_timeouts(500)
        with Meter(ledger.client) as meter:
            for _ in range(runs):
                ledger.run(script)
        script_server = meter.usage.usec.get("fcall", 0) / runs
    return wall, server, script_server


def scheduler(servers: Servers, settings: Settings) -> Results:
    small = _check_time(servers, SMALL, settings.check_runs)
    large = _check_time(servers, settings.scale_jobs, settings.check_runs)
    note = f"scheduler.check('timeouts'), none due, median of {settings.check_runs}"
    return {
        F.SCHED_SMALL: Figure(small[0], "us", note, {"server_us": small[1], "script_server_us": small[2]}),
        F.SCHED_LARGE: Figure(
            large[0],
            "us",
            f"{settings.scale_jobs:,} running; " + note,
            {"server_us": large[1], "script_server_us": large[2]},
        ),
        F.SCHED_RATIO: Figure(
            large[0] / small[0], "x", "100k / 10", {"server_ratio": large[1] / max(small[1], 1e-9)}
        ),
    }


def _quota_fetch(servers: Servers, held: int, runs: int) -> float | None:
    """Median µs of fetching the one free job behind ``held`` held-back jobs; None if not held back."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        ledger.run(commands.put_queue(QUEUE, QueueSettings(max_running_per_key=1)))
        hot = JobOptions(quota_key="hot")
        ledger.run(commands.create_job(QUEUE, hot))
        if len(ledger.run(commands.fetch_jobs(QUEUE, 1))) != 1:
            return None
        for start in range(0, held, BATCH):
            ledger.run_many([commands.create_job(QUEUE, hot)] * min(BATCH, held - start))
        times = []
        for i in range(runs):
            free = job_id(ledger.run(commands.create_job(QUEUE, JobOptions(quota_key=f"free-{i}"))))
            begin = time.perf_counter()
            fetched = ledger.run(commands.fetch_jobs(QUEUE, 1))
            times.append((time.perf_counter() - begin) * 1e6)
            if [f.id for f in fetched] != [free]:
                return None
            complete_all(ledger, fetched)
    return F.median(times)


def quotas(servers: Servers, settings: Settings) -> Results:
    runs = max(10, settings.check_runs // 4)
    small = _quota_fetch(servers, SMALL, runs)
    large = _quota_fetch(servers, settings.scale_jobs, runs) if small is not None else None
    if small is None or large is None:
        why = "fetch_jobs does not hold jobs back by quota_key yet (max_running_per_key)"
        return {
            k: Figure(None, u, why)
            for k, u in ((F.QUOTA_SMALL, "us"), (F.QUOTA_LARGE, "us"), (F.QUOTA_RATIO, "x"))
        }
    note = f"fetch 1 free job, median of {runs}"
    return {
        F.QUOTA_SMALL: Figure(small, "us", f"{SMALL} held back; " + note),
        F.QUOTA_LARGE: Figure(large, "us", f"{settings.scale_jobs:,} held back; " + note),
        F.QUOTA_RATIO: Figure(large / small, "x", "100k / 10"),
    }


def build_ledger(ledger: Ledger, events: int) -> int:
    """At least ``events`` events, three per job, with pipelined commands; the number of events."""
    jobs = -(-events // 3)
    for start in range(0, jobs, 20 * BATCH):
        chunk = min(20 * BATCH, jobs - start)
        enqueue_pipelined(ledger, chunk, BATCH)
        complete_all(ledger, start_all(ledger))
    return int(ledger.client.xlen(ledger.keys.events))


def replay_rate(servers: Servers, events: int) -> Figure:
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        built = build_ledger(ledger, events)
        target = "bench-replay-" + uuid.uuid4().hex[:6]
        try:
            start = time.perf_counter()
            applied = rebuild(ledger.client, ledger.keys.namespace, target)
            seconds = time.perf_counter() - start
        finally:
            if not servers.isolated:
                drop(ledger.client, Keys(target))
    return Figure(applied / seconds, "events/s", f"{built:,} events rebuilt", {"seconds": seconds})


def measure(servers: Servers, settings: Settings, which: set[str], log: Any = print) -> Results:
    results: Results = {}
    if "memory" in which:
        results[F.MEMORY] = memory(servers, settings.jobs)
        log(f"  ours memory: {results[F.MEMORY].value:,.0f} B/job")
    if "scheduler" in which:
        results.update(scheduler(servers, settings))
        log(f"  ours scheduler check ratio: {results[F.SCHED_RATIO].value:.2f}")
    if "quotas" in which:
        results.update(quotas(servers, settings))
    if "replay" in which:
        results[F.REPLAY] = replay_rate(servers, settings.replay_events)
        log(f"  ours replay: {results[F.REPLAY].value:,.0f} events/s")
    return results
