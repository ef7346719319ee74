"""Ours searching and listing a big queue (the ``search`` part, run when ``--only`` names it).

A queue of N jobs (1,000,000; 100,000 with ``--quick``) is seeded fast with the batch commands:
nine in ten completed, one in ten still queued, each with an input of its own.  The app is served
(uvicorn, one process).  Measured over HTTP, as the dashboard and the command line ask:

- a search page for a text no job holds (each page reads its whole budget of jobs: the worst page),
  its time p50 / p99 over consecutive pages;
- a whole search for a text only the last job holds: the pages it takes and its time end to end;
- a listing page of the queued jobs and of the completed ones;
- other clients' request p99 while searches run one after another, beside the same with none.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx2

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.projections.job_search import SCAN_BUDGET

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_bulk import IDLE, OTHER, during
from .ours_http import serving
from .ours_process import QUEUE, ledger_on
from .server import Servers

SEED_BATCH = 2000
#: One job in this many stays queued; the others complete.
QUEUED_EVERY = 10
#: Search pages timed for the per-page figures.
PAGES = 30
JOBS = f"/queue/{QUEUE}/jobs"


def seed(ledger: Ledger, jobs: int) -> None:
    """``jobs`` jobs on ``bench``, each input ``{"n": i, "word": "w<i>"}``; one in ten left queued."""
    done = JobUpdate.model_validate({"status": "completed", "output": {"ok": True}})
    for at in range(0, jobs, SEED_BATCH):
        count = min(SEED_BATCH, jobs - at)
        options = [JobOptions(input={"n": at + i, "word": f"w{at + i}"}) for i in range(count)]
        ledger.run(commands.create_jobs(QUEUE, options))
        started = ledger.run(commands.fetch_jobs(QUEUE, count - count // QUEUED_EVERY))
        ledger.run(commands.update_jobs([(j.id, done) for j in started]))


def _get(http: httpx2.Client, path: str, **params: str | int) -> tuple[float, dict[str, Any]]:
    """One GET's time in ms and its JSON."""
    started = time.perf_counter()
    response = http.get(path, params=params)
    response.raise_for_status()
    return (time.perf_counter() - started) * 1000, response.json()


def _search_pages(http: httpx2.Client, text: str, pages: int | None) -> tuple[list[float], list[Any]]:
    """Each page's time and the jobs found, over ``pages`` pages (None: until the search ends)."""
    times: list[float] = []
    found: list[Any] = []
    cursor = 0
    while pages is None or len(times) < pages:
        took, page = _get(http, JOBS, search=text, cursor=cursor)
        times.append(took)
        found += page["jobs"]
        if page["next"] is None:
            break
        cursor = int(page["next"])
    return times, found


def measure(servers: Servers, settings: Settings, log: Callable[[str], None] = print) -> Results:
    jobs = 100_000 if settings.quick else 1_000_000
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        ledger.run(commands.put_queue(OTHER, QueueSettings()))
        started = time.perf_counter()
        seed(ledger, jobs)
        log(f"  search: {jobs:,} jobs seeded in {time.perf_counter() - started:.0f} s")
        with (
            serving("ours", url, ledger.keys.namespace, 1) as served,
            httpx2.Client(base_url=f"http://127.0.0.1:{served.port}", timeout=600) as http,
            httpx2.Client(base_url=f"http://127.0.0.1:{served.port}", timeout=60) as others,
        ):
            pages, _ = _search_pages(http, "absent", PAGES)
            whole_started = time.perf_counter()
            every, found = _search_pages(http, f"w{jobs - 1}", None)
            whole = time.perf_counter() - whole_started
            if len(found) != 1:
                raise RuntimeError(f"the search for the last job's word found {len(found)} jobs")
            queued = [_get(http, JOBS, status="queued")[0] for _ in range(5)]
            ended = [_get(http, JOBS, status="completed")[0] for _ in range(5)]
            idle = during(others, IDLE, None)
            busy = during(others, None, lambda: _search_pages(http, "absent", PAGES))
    p99, idle_p99 = F.percentile(busy, 99), F.percentile(idle, 99)
    log(f"  search: page p50 {F.median(pages):.0f} ms, whole search {whole:.1f} s over {len(every)} "
        f"pages; others' p99 {p99:.1f} ms (idle {idle_p99:.1f})")  # fmt: skip
    where = f"{jobs:,} jobs, {jobs // QUEUED_EVERY:,} queued"
    budget = f"{where}; {SCAN_BUDGET} jobs read a page"
    return {
        "search_page_p50_ms": Figure(F.median(pages), "ms", budget, {"p99": F.percentile(pages, 99)}),
        "search_whole_s": Figure(whole, "s", f"{where}; a text of the last job", {"pages": len(every)}),
        "list_queued_page_ms": Figure(F.median(queued), "ms", f"{where}; status=queued, 20 a page"),
        "list_completed_page_ms": Figure(F.median(ended), "ms", f"{where}; status=completed, 20 a page"),
        "search_others_p99_ms": Figure(p99, "ms", f"while searches run; idle: {idle_p99:.1f} ms"),
    }
