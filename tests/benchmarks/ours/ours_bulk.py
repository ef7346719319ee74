"""Ours under a bulk operation: ``POST /bulk`` requeueing N failed jobs (100,000; 10,000 with
``--quick``), its time, and the latency other clients see meanwhile.

The failed jobs are seeded fast with the batch commands on queue ``bench``; the app is served (uvicorn,
one process, as :mod:`tests.benchmarks.ours.ours_http` serves it).  A client thread sends other
clients' requests one at a time -- a create on another queue and a read of a job, in turn -- first
for a few seconds with nothing else going on, then while one request runs the whole requeue (it
waits for the end).  Reported: the requeue's time and rate, and the other requests' p50 / p99
during it beside the same without it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx2

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_http import serving
from .ours_process import QUEUE, ledger_on
from .server import Servers

OTHER = "other"
SEED_BATCH = 1000
#: Seconds of other clients' requests before the bulk starts, for the baseline.
IDLE = 3.0


def seed_failed(ledger: Ledger, jobs: int) -> None:
    """``jobs`` failed jobs on ``bench`` (each created, fetched and failed with kind ``E``)."""
    failure = JobUpdate.model_validate({"status": "failed", "error": {"kind": "E", "message": "down"}})
    for at in range(0, jobs, SEED_BATCH):
        count = min(SEED_BATCH, jobs - at)
        ledger.run(commands.create_jobs(QUEUE, [JobOptions(input={"n": at + i}) for i in range(count)]))
        started = ledger.run(commands.fetch_jobs(QUEUE, count))
        ledger.run(commands.update_jobs([(j.id, failure) for j in started]))


def others(http: httpx2.Client, stop: threading.Event, times: list[float]) -> None:
    """Other clients' requests, one at a time, each one's time in ms, until ``stop``."""
    turn = 0
    while not stop.is_set():
        started = time.perf_counter()
        if turn % 2:
            http.get("/job/1").raise_for_status()
        else:
            http.post(f"/queue/{OTHER}/job", json={"input": turn}).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
        turn += 1


def during(http: httpx2.Client, seconds: float | None, work: Callable[[], object] | None) -> list[float]:
    """Other clients' request times over ``seconds``, or while ``work`` runs."""
    times: list[float] = []
    stop = threading.Event()
    thread = threading.Thread(target=others, args=(http, stop, times))
    thread.start()
    try:
        if work is not None:
            work()
        elif seconds is not None:
            time.sleep(seconds)
    finally:
        stop.set()
        thread.join()
    return times


def measure(servers: Servers, settings: Settings, log: Callable[[str], None] = print) -> Results:
    jobs = 10_000 if settings.quick else 100_000
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        ledger.run(commands.put_queue(OTHER, QueueSettings()))
        seed_failed(ledger, jobs)
        log(f"  bulk: {jobs:,} failed jobs seeded")
        with serving("ours", url, ledger.keys.namespace, 1) as served:
            base = f"http://127.0.0.1:{served.port}"
            with (
                httpx2.Client(base_url=base, timeout=600) as bulk,
                httpx2.Client(base_url=base, timeout=60) as http,
            ):
                idle = during(http, IDLE, None)
                answer: dict[str, object] = {}
                started = time.perf_counter()

                def requeue() -> None:
                    body = {"action": "requeue", "queue": QUEUE, "status": "failed"}
                    response = bulk.post("/bulk?wait=300", json=body)
                    response.raise_for_status()
                    answer.update(response.json())

                busy = during(http, None, requeue)
                took = time.perf_counter() - started
    if answer.get("done") != jobs:
        raise RuntimeError(f"the bulk requeue did {answer.get('done')} of {jobs} jobs: {answer}")
    log(f"  bulk: {jobs:,} requeued in {took:.1f} s; others' p99 {F.percentile(busy, 99):.1f} ms")
    detail = {"jobs": jobs, "rate_per_s": jobs / took, "requests_during": len(busy)}
    return {
        "bulk_requeue_s": Figure(took, "s", f"{jobs:,} failed jobs, one POST /bulk", detail),
        "bulk_others_p50_ms": Figure(F.median(busy), "ms", f"idle: {F.median(idle):.1f} ms"),
        "bulk_others_p99_ms": Figure(F.percentile(busy, 99), "ms", f"idle: {F.percentile(idle, 99):.1f} ms"),
    }
