"""Deadlines in real time: the scheduler as ``jobledger serve`` runs it (the default check intervals
of the config) in a thread of its own, and scenarios that each set one deadline two seconds out and
measure how late the scheduler kept it, from the ledger itself: the event's ``at`` minus the
deadline's score in its due set."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jobledger.ledger import launchers
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.redis_clients import async_client
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.ledger.tasks import cancel_and_wait
from jobledger.runtime.config import Config
from jobledger.scheduler import loop as scheduler
from tests.support.ledger import create, events, fetch_one, put_queue, update

#: The check intervals ``serve`` runs with when none are configured (30 s, 1 m, 5 m).
DEFAULT_EVERY = scheduler.intervals(Config())
#: How far out each scenario sets its deadline (s).
OUT = 2.0


@dataclass(frozen=True)
class Deadline:
    """A deadline just set: its due set, its member there, and the event that keeps it."""

    due_set: str
    member: int
    event: str
    field: str = "job"  # the stream entry's field naming the member


def _retry(ledger: Ledger) -> Deadline:
    put_queue(ledger, "q", retries=1, retry_delays=[f"{OUT}s"])
    job_id = create(ledger)
    fetch_one(ledger)
    update(ledger, job_id, status="failed")
    return Deadline("due_retry", job_id, "job_requeued")


def _timeout(ledger: Ledger) -> Deadline:
    put_queue(ledger, "q", timeout=f"{OUT}s")
    job_id = create(ledger)
    fetch_one(ledger)
    return Deadline("due_run", job_id, "job_timed_out")


def _release(ledger: Ledger) -> Deadline:
    put_queue(ledger, "q")
    return Deadline("due_release", create(ledger, delay=f"{OUT}s"), "job_released")


def _queued(ledger: Ledger) -> Deadline:
    put_queue(ledger, "q", max_queued_time=f"{OUT}s")
    return Deadline("due_queued", create(ledger), "job_timed_out")


def _expiry(ledger: Ledger) -> Deadline:
    put_queue(ledger, "q", expires_after=f"{OUT}s")
    job_id = create(ledger)
    fetch_one(ledger)
    update(ledger, job_id, status="completed")
    return Deadline("due_expire", job_id, "job_expired")


def _launcher(ledger: Ledger) -> Deadline:
    put_queue(ledger, "q")
    spec = LauncherSpec.model_validate({"type": "@interval", "arguments": f"{OUT}s", "queue": "q"})
    return Deadline("due_launch", ledger.run(launchers.create(spec, ledger.clock())), "launcher_fired",
                    "launcher")  # fmt: skip


SCENARIOS: dict[str, Callable[[Ledger], Deadline]] = {
    "retry delay": _retry,
    "timeout": _timeout,
    "scheduled release": _release,
    "max_queued_time": _queued,
    "expiry": _expiry,
    "@interval launcher": _launcher,
}


def _member_of(entry: dict[str, str], field: str) -> str | None:
    if field in entry:
        return entry[field]
    value = json.loads(entry.get("data") or "{}").get(field)
    return None if value is None else str(value)


def lateness_ms(ledger: Ledger, deadline: Deadline, within: float = OUT + 6.0) -> int:
    """How many ms after its due time the deadline was kept (waits for its event up to ``within`` s)."""
    due = ledger.client.zscore(ledger.keys.build(deadline.due_set), deadline.member)
    assert due is not None, f"{deadline} is not in its due set"
    stop = time.monotonic() + within
    while time.monotonic() < stop:
        for entry in events(ledger.client, ledger.keys.namespace):
            if entry["type"] == deadline.event and _member_of(entry, deadline.field) == str(deadline.member):
                return int(entry["at"]) - int(due)
        time.sleep(0.02)
    raise AssertionError(f"no {deadline.event} for {deadline.member} within {within}s of setting it")


@contextmanager
def scheduler_running(
    redis_url: str, namespace: str, every: dict[str, int] = DEFAULT_EVERY, partitions: int | None = None
) -> Iterator[None]:
    """The scheduler (its own client and ledger watch) runs in a thread while the block runs; on a
    ledger split into ``partitions``, as ``jobledger scheduler`` opens it, when given."""
    ready: Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = Future()

    async def main() -> None:
        ledger: AsyncLedger | OpeningLedger = (
            AsyncLedger(async_client(redis_url), namespace)
            if partitions is None
            else OpeningLedger(redis_url, namespace, partitions)
        )
        task = asyncio.create_task(scheduler.run(ledger, every))
        ready.set_result((asyncio.get_running_loop(), task))
        try:
            await asyncio.gather(task, return_exceptions=True)
        finally:
            await (ledger.client.aclose() if isinstance(ledger, AsyncLedger) else ledger.aclose())

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="scheduler", daemon=True)
    thread.start()
    loop, task = ready.result(timeout=10)
    try:
        yield
    finally:
        asyncio.run_coroutine_threadsafe(cancel_and_wait([task]), loop).result(timeout=10)
        thread.join(timeout=10)
