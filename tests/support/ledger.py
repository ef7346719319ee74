"""Helpers shared by the ledger tests: short ways to set up queues and jobs, read them back, and
assert that a refused command changed nothing."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
import redis
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.commands import Call, Fetched
from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import Partitioned, open_ledger
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.placements import pin, placement_keys
from jobledger.ledger.redis_clients import sync_client
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from jobledger.replay.compare import snapshot
from jobledger.replay.placement import misplaced
from jobledger.scheduler.loop import tick

#: The partitions every ledger of the session is split into (None: one, the default; 16, a Cluster's
#: default, on the session's Cluster); see tests/conftest.py.
TEST_PARTITIONS: int | None = (
    int(os.environ["JOBLEDGER_TEST_PARTITIONS"])
    if os.environ.get("JOBLEDGER_TEST_PARTITIONS")
    else 16
    if os.environ.get("JOBLEDGER_TEST_CLUSTER") == "1"
    else None
)

START = datetime(2030, 1, 1, tzinfo=UTC)
START_MS = int(START.timestamp() * 1000)


#: How far apart two ids of one queue's partition are handed out: 1, unless the session splits its
#: ledgers (partition p of N hands out p + N, p + 2N, ...).
ID_STEP = TEST_PARTITIONS or 1


#: The session's Redis (set by the ``redis_url`` fixture): where the helpers below read and pin the
#: placements of the queues of a split ledger.
SESSION: dict[str, str] = {}


@contextmanager
def _home(namespace: str, count: int) -> Iterator[tuple[redis.Redis, Partitioning]]:
    where = Partitioning(namespace, count)
    client = sync_client(SESSION["url"], where.namespaces[0])
    try:
        yield client, where
    finally:
        client.close()


def placed(namespace: str, queue: str, count: int = ID_STEP) -> int:
    """The partition ``queue`` of ``namespace`` (split into ``count``) is placed in, as stored; a
    queue whose placement was wiped with the keys of its ledger (a server keeps its placements in
    memory and recreates the queue where it was) is looked for, and recorded, as a new process would."""
    with _home(namespace, count) as (client, where):
        found = client.hget(placement_keys(where)[0], queue)
        if found is None:
            router = open_ledger(SESSION["url"], namespace, count)
            try:
                router.locate([queue])
            finally:
                for runner in router.runners:
                    runner.client.close()
            found = client.hget(placement_keys(where)[0], queue)
    if found is None:
        raise LookupError(f"queue {queue!r} of {namespace!r} is placed nowhere yet")
    return int(found)


def pinned(namespace: str, count: int, names: dict[str, int]) -> None:
    """Place each queue of ``names`` in its partition, before it is created, in ``namespace`` split
    into ``count``: where a test needs a queue in a given partition."""
    with _home(namespace, count) as (client, where):
        for name, partition in names.items():
            pin(client, where, name, partition)


def as_hashed(namespace: str, count: int, names: Iterable[str]) -> None:
    """Place each of ``names`` where a hash of its name put a queue before placements existed (where
    the test expects it), before it is created, in ``namespace`` split into ``count``."""
    where = Partitioning(namespace, count)
    pinned(namespace, count, {name: where.hashed(name) for name in names})


def nth_id(namespace: str, n: int, queue: str = "q") -> int:
    """The id of the ``n``-th job (or launcher) made in ``queue``'s partition of a fresh
    ``namespace``, the queue created: ``n``, unless the session splits its ledgers."""
    if ID_STEP == 1:
        return n
    return n * ID_STEP + placed(namespace, queue)


def queue_ledger(ledger: Ledger | Partitioned, queue: str = "q") -> Ledger:
    """The runner of ``queue``'s partition (the ledger itself when it is one), for reading its keys."""
    return ledger.runners[ledger.locate([queue])[queue]] if isinstance(ledger, Partitioned) else ledger


def in_partition_of(namespace: str, queue: str, stem: str) -> str:
    """A queue name starting with ``stem`` placed in ``queue``'s partition (``queue`` created
    already; ``stem`` itself when the session does not split its ledgers): the first ``stem<n>`` not
    placed elsewhere already."""
    if ID_STEP == 1:
        return stem
    wanted = placed(namespace, queue)
    with _home(namespace, ID_STEP) as (client, where):
        names = (f"{stem}{n}" for n in itertools.count())
        return next(name for name in names if pin(client, where, name, wanted) == wanted)


def one_queue_per_partition(namespace: str, count: int) -> list[str]:
    """A queue name (``q<n>``) placed in each partition of ``namespace`` split into ``count``, in
    partition order (each the name a hash of it put there before placements existed)."""
    where, names = Partitioning(namespace, count), dict[int, str]()
    for n in itertools.count():
        names.setdefault(where.hashed(f"q{n}"), f"q{n}")
        if len(names) == count:
            break
    if count > 1:
        pinned(namespace, count, {name: p for p, name in names.items()})
    return [names[p] for p in range(count)]


def put_queue(ledger: Ledger, name: str = "q", **settings: Any) -> bool:
    return ledger.run(commands.put_queue(name, QueueSettings(**settings)))


def create(ledger: Ledger, queue: str = "q", **options: Any) -> int:
    return ledger.run(commands.create_job(queue, JobOptions(**options))).id


def fetch(ledger: Ledger, queue: str = "q", count: int = 1, worker: str | None = None) -> list[Fetched]:
    return ledger.run(commands.fetch_jobs(queue, count, worker))


def fetch_one(ledger: Ledger, queue: str = "q") -> Fetched:
    fetched = fetch(ledger, queue)
    assert len(fetched) == 1, fetched
    return fetched[0]


def update(ledger: Ledger, job_id: int, **fields: Any) -> int:
    return ledger.run(commands.update_job(job_id, JobUpdate(**fields)))


def job(ledger: Ledger, job_id: int) -> dict[str, Any]:
    return ledger.read(readers.job(job_id))


def raw_job(ledger: Ledger, job_id: int) -> dict[str, str]:
    """The stored hash, as text (times in ms)."""
    raw = ledger.client.hgetall(ledger.keys.job(job_id))
    return {k.decode(): v.decode() for k, v in raw.items()}


def status(ledger: Ledger, job_id: int) -> str:
    return str(job(ledger, job_id)["status"])


def run_tick(ledger: Ledger) -> dict[str, list[int]]:
    return tick(ledger)


def stream_length(client: redis.Redis, namespace: str) -> int:
    return int(client.xlen(Keys(namespace).events))


def events(client: redis.Redis, namespace: str, job_id: int | None = None) -> list[dict[str, str]]:
    """Every entry of the stream (of one job, if given) as text fields plus ``id``."""
    entries: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(Keys(namespace).events)  # type: ignore[assignment]
    out = []
    for entry_id, raw in entries:
        fields = {k.decode(): v.decode() for k, v in raw.items()}
        if job_id is None or fields.get("job") == str(job_id):
            out.append({"id": entry_id.decode(), **fields})
    return out


def event_types(ledger: Ledger, job_id: int) -> list[str]:
    return [e["type"] for e in events(ledger.client, ledger.keys.namespace, job_id)]


def zscore(ledger: Ledger, key: str, job_id: int) -> float | None:
    return ledger.client.zscore(key, job_id)


def at(seconds: float) -> int:
    """Milliseconds since the epoch, ``seconds`` after START."""
    return START_MS + round(seconds * 1000)


def later(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)


@contextmanager
def frozen_clock() -> Iterator[FrozenDateTimeFactory]:
    """Time stands still at START until the test moves it (``.tick(seconds)``)."""
    with freeze_time(START) as factory:
        yield cast(FrozenDateTimeFactory, factory)


@contextmanager
def unchanged(ledger: Ledger) -> Iterator[None]:
    """Assert that the block appends no event and changes no projection."""
    client, ns = ledger.client, ledger.keys.namespace
    before = (stream_length(client, ns), snapshot(client, ns))
    yield
    assert (stream_length(client, ns), snapshot(client, ns)) == before


def refused(ledger: Ledger, call: Call[Any], error: type[JobLedgerError]) -> JobLedgerError:
    """Run ``call``, which must raise ``error`` and change nothing; the exception."""
    with unchanged(ledger), pytest.raises(error) as caught:
        ledger.run(call)
    return caught.value


def assert_well_placed(ledger: Ledger) -> None:
    assert misplaced(ledger.client, ledger.keys.namespace) == []


STATES = (
    "queued", "running", "completed", "failed_waiting", "failed_ended",
    "timed_out_waiting", "timed_out_ended", "cancelled",
)  # fmt: skip
STATUS_OF = {state: state.removesuffix("_waiting").removesuffix("_ended") for state in STATES}


def job_in_state(ledger: Ledger, frozen: FrozenDateTimeFactory, state: str) -> int:
    """A new job of queue "q" (its timeout must be 10s) in ``state``, one of STATES.

    ``*_waiting`` jobs have a retry left, due in an hour; ``*_ended`` ones have none.
    """
    waiting = state.endswith("_waiting")
    job_id = create(ledger, tags=["t"], retries=1 if waiting else 0, retry_delays=["1h"])
    if state == "queued":
        return job_id
    assert fetch_one(ledger).id == job_id
    if state.startswith("timed_out"):
        frozen.tick(10)
        assert run_tick(ledger)["timeouts"] == [job_id]
    elif state != "running":
        update(ledger, job_id, status=state if state in ("completed", "cancelled") else "failed")
    assert status(ledger, job_id) == STATUS_OF[state]
    return job_id
