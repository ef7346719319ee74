"""Ours in a browser's place: the dashboard's page times on a large ledger, beside the same on a small one.

A ledger of N jobs (1,000,000 by default; 10,000 with ``--quick``) is seeded fast with the bulk
create command, on four queues kept forever (``expires_after`` 0s): 5% of each queue left queued,
the rest fetched and ended (1 in 20 failed with an error, the others completed), 1 job in 10 tagged
``vip``, and one job halfway through with a longer story (failed, retried, progressed, completed).
Then the app is served (uvicorn, one process, as :mod:`tests.benchmarks.ours.ours_http` serves it) and each
page is fetched over HTTP, one request at a time: the queues overview, a queue's first page, a deep
page of its completed jobs (halfway, or the deepest page the dashboard serves), its failed jobs, its
``vip`` jobs, the storied job's page, the failed jobs page, the ledger page and the live ledger page.
Median and p95 of many requests each.

The same is measured on a ledger of 10,000 jobs (1,000 with ``--quick``); a page's ratio large /
small is near 1 when the page reads only what it shows.  The app process's resident memory and the
server's ``used_memory`` after the large run are reported beside.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from jobledger.ledger import commands
from jobledger.ledger.requests import ErrorReport, JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.server.ui.pages import MAX_PAGE

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_http import serving
from .ours_process import ledger_on
from .ours_scale import start_all
from .server import Servers

QUEUES = ("emails", "reports", "images", "billing")
TAG = "vip"
CREATE_BATCH = 500
UPDATE_BATCH = 1000
#: Jobs ended per round (created, then all fetched and ended), so no round holds much in memory.
ROUND = 20_000
#: Requests before the timed ones, so no figure pays a first connection or a cold cache.
WARMUP = 3
_ROW = re.compile(r"data-job=")
TRACEBACK = 'Traceback (most recent call last):\n  File "task.py", line 3, in run\nOSError: transient\n'


@dataclass(frozen=True)
class Seeded:
    """What a seeded ledger holds: the pages to time are named after it."""

    jobs: int
    events: int
    queue: str  # the queue whose pages are timed
    completed: int  # completed jobs on that queue
    storied: int  # a job with a history of several events


def _options(n: int) -> JobOptions:
    return JobOptions(input={"n": n}, tags=[TAG] if n % 10 == 0 else None)


def _created_ids(created: list[Any]) -> list[int]:
    ids = []
    for c in created:
        if isinstance(c, Exception):
            raise c
        ids.append(int(c.id))
    return ids


def _create(ledger: Ledger, queue: str, first: int, count: int) -> None:
    for start in range(first, first + count, CREATE_BATCH):
        batch = [_options(n) for n in range(start, min(start + CREATE_BATCH, first + count))]
        _created_ids(ledger.run(commands.create_jobs(queue, batch)))


def _outcome(n: int, attempt: int) -> JobUpdate:
    if n % 20 == 0:
        return JobUpdate(status="failed", attempt=attempt, error=ErrorReport(message=f"job {n} failed"))
    return JobUpdate(status="completed", attempt=attempt)


def _end_round(ledger: Ledger, queue: str, first: int, count: int) -> None:
    """Create ``count`` jobs, fetch them all, and end each: 1 in 20 failed, the rest completed."""
    _create(ledger, queue, first, count)
    fetched = start_all(ledger, queue)
    updates = [(f.id, _outcome(first + i, f.attempt)) for i, f in enumerate(fetched)]
    for start in range(0, len(updates), UPDATE_BATCH):
        for outcome in ledger.run(commands.update_jobs(updates[start : start + UPDATE_BATCH])):
            if isinstance(outcome, Exception):
                raise outcome


def _storied(ledger: Ledger, queue: str) -> int:
    """A job that failed once, was retried, reported progress and output, and completed; its id."""
    job = _created_ids([ledger.run(commands.create_job(queue, JobOptions(input={"story": 1}, retries=1)))])[0]
    first = ledger.run(commands.fetch_jobs(queue, 1, "bench"))[0]
    error = ErrorReport(message="transient", traceback=TRACEBACK)
    ledger.run(commands.update_job(job, JobUpdate(status="failed", attempt=first.attempt, error=error)))
    ledger.run(commands.check_retries(10))
    again = ledger.run(commands.fetch_jobs(queue, 1, "bench"))[0]
    ledger.run(commands.update_job(job, JobUpdate(progress=50, attempt=again.attempt)))
    done = JobUpdate(status="completed", attempt=again.attempt, output={"ok": 1})
    ledger.run(commands.update_job(job, done))
    return job


def seed(ledger: Ledger, jobs: int) -> Seeded:
    """``jobs`` jobs over :data:`QUEUES`, as the module says."""
    per_queue = jobs // len(QUEUES)
    left_queued = per_queue // 20
    ended = per_queue - left_queued
    storied = 0
    for queue in QUEUES:
        ledger.run(commands.put_queue(queue, QueueSettings(expires_after=0)))
        for start in range(0, ended, ROUND):
            _end_round(ledger, queue, start, min(ROUND, ended - start))
            if not storied and start + ROUND >= ended // 2:
                storied = _storied(ledger, queue)
        _create(ledger, queue, ended, left_queued)
    completed = ended - (ended + 19) // 20  # n % 20 == 0 failed
    events = int(ledger.client.xlen(ledger.keys.events))
    return Seeded(jobs=len(QUEUES) * per_queue, events=events, queue=QUEUES[0], completed=completed,
                  storied=storied)  # fmt: skip


def pages(seeded: Seeded, page_size: int) -> dict[str, str]:
    """The pages timed, by figure key: each a path under the served app."""
    q = seeded.queue
    deep = min(MAX_PAGE, max(2, seeded.completed // page_size // 2))
    return {
        F.DASH_QUEUES: "/ui",
        F.DASH_QUEUE: f"/ui/queue/{q}",
        F.DASH_QUEUE_DEEP: f"/ui/queue/{q}?status=completed&page={deep}",
        F.DASH_QUEUE_STATUS: f"/ui/queue/{q}?status=failed",
        F.DASH_QUEUE_TAG: f"/ui/queue/{q}?tag={TAG}",
        F.DASH_JOB: f"/ui/job/{seeded.storied}",
        F.DASH_FAILED: "/ui/failed",
        F.DASH_LEDGER: "/ui/ledger",
        F.DASH_EVENTS: "/ui/events",
    }


def _get(http: httpx2.Client, path: str) -> httpx2.Response:
    response = http.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"GET {path} answered {response.status_code}: {response.text[:200]!r}")
    return response


def page_size(http: httpx2.Client, seeded: Seeded) -> int:
    """How many jobs a queue page shows (its completed jobs' first page is full)."""
    rows = len(_ROW.findall(_get(http, f"/ui/queue/{seeded.queue}?status=completed").text))
    if not rows:
        raise RuntimeError("the queue page shows no job rows (tr[data-job])")
    return rows


def timed(http: httpx2.Client, path: str, requests: int) -> list[float]:
    """Milliseconds of ``requests`` GETs of ``path``, one at a time, after :data:`WARMUP` untimed."""
    first = _get(http, path)
    if "/ui/queue/" in path and not _ROW.search(first.text):
        raise RuntimeError(f"GET {path} shows no job: nothing would be measured")
    for _ in range(WARMUP):
        _get(http, path)
    out = []
    for _ in range(requests):
        start = time.perf_counter()
        _get(http, path)
        out.append((time.perf_counter() - start) * 1000)
    return out


def resident_mib(pid: int) -> float:
    """A process's resident memory (VmRSS), in MiB; 0 where /proc does not say."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass(frozen=True)
class Run:
    """One ledger's page times (ms, by figure key) and what it held."""

    seeded: Seeded
    times: dict[str, list[float]]
    app_rss_mib: float
    server_used_mib: float
    seconds_to_seed: float


def measure_one(servers: Servers, jobs: int, requests: int, log: Callable[[str], None]) -> Run:
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        start = time.perf_counter()
        seeded = seed(ledger, jobs)
        seeding = time.perf_counter() - start
        log(f"  dashboard: {seeded.jobs:,} jobs, {seeded.events:,} events seeded in {seeding:.0f} s")
        with serving("ours", url, ledger.keys.namespace, 1) as served, \
                httpx2.Client(base_url=f"http://127.0.0.1:{served.port}", timeout=60) as http:  # fmt: skip
            size = page_size(http, seeded)
            times = {key: timed(http, path, requests) for key, path in pages(seeded, size).items()}
            rss = resident_mib(served.pid)
        used = int(ledger.client.info("memory")["used_memory"]) / 2**20
    return Run(seeded, times, rss, used, seeding)


def figures(large: Run, small: Run) -> Results:
    """A figure per page (the large ledger's median), its p95 and the small ledger's beside it, and
    the worst ratio large / small of the medians."""
    results: Results = {}
    ratios = {}
    for key, values in large.times.items():
        big, little = F.median(values), F.median(small.times[key])
        ratios[key] = big / little
        detail = {
            "p95_ms": F.percentile(values, 95), "small_median_ms": little,
            "small_p95_ms": F.percentile(small.times[key], 95), "ratio": big / little,
            "requests": len(values),
        }  # fmt: skip
        note = (f"{large.seeded.jobs:,} jobs: p95 {detail['p95_ms']:.1f} ms; {small.seeded.jobs:,} jobs: "
                f"median {little:.1f} ms (x{big / little:.2f})")  # fmt: skip
        results[key] = Figure(big, "ms", note, detail)
    worst = max(ratios, key=lambda k: ratios[k])
    results[F.DASH_RATIO] = Figure(
        ratios[worst], "x", f"worst page: {worst}; {large.seeded.jobs:,} / {small.seeded.jobs:,} jobs",
        {"by_page": ratios},
    )  # fmt: skip
    results[F.DASH_RSS] = Figure(
        large.app_rss_mib, "MiB", f"the app process after serving {large.seeded.jobs:,} jobs' pages",
        {"server_used_memory_mib": large.server_used_mib, "events": large.seeded.events,
         "seconds_to_seed": large.seconds_to_seed, "small_app_rss_mib": small.app_rss_mib},
    )  # fmt: skip
    return results


def measure(servers: Servers, settings: Settings, log: Callable[[str], None] = print) -> Results:
    large = measure_one(servers, settings.dashboard_jobs, settings.page_requests, log)
    small = measure_one(servers, settings.dashboard_small_jobs, settings.page_requests, log)
    results = figures(large, small)
    log(f"  dashboard: worst page ratio {results[F.DASH_RATIO].value:.2f} ({results[F.DASH_RATIO].note})")
    return results
