"""``GET /metrics``: Prometheus text for one app, from a registry of its own (built from
``app.state.metrics``, :mod:`jobledger.server.process_metrics`).

Two kinds of metric: what this process measures itself — command latency, observed as the runner
finishes each command (:attr:`jobledger.ledger.runner.AsyncLedger.observe`), and the live feeds it
serves — and the ledger's state, read from Redis when Prometheus scrapes: each queue's jobs by status,
lifetime counts, wait and run time histograms and oldest queued job (:mod:`jobledger.server.
queue_metrics`); the ledger's own figures (:func:`_ledger_families`: the stream's length, events ever
appended, the archive's position; the seal's lag belongs there too); how overdue each scheduler
check is; the blob collector's counters.  When Redis is unreachable the scrape still answers 200,
with ``jobledger_redis_up 0`` and only the in-process metrics, as ``/health`` answers 200
``unhealthy``.

How late the scheduler runs due work is read from the deadline sets at scrape, not observed by the
scheduler: whichever process runs it (``serve`` or ``jobledger scheduler``), and when none does, the
oldest due deadline shows it.

On a ledger split into partitions the state is the whole ledger's: each queue's figures from its
partition, the streams' lengths and events added up (and each partition's length, labelled with
``partition``, as is a sealed ledger's seal lag), each check's lag from the oldest deadline of any
partition, the archive's position that of the partition furthest behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import redis
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from jobledger.blobs.collector import SweepCounters, sweep_counters
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.keys import TEMPLATES, Keys
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.partitions import HOME, spread
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import score_pairs
from jobledger.ledger.stream import id_key
from jobledger.projections import readers
from jobledger.projections.archive import ArchiveRecord, archive_key, parse_record
from jobledger.projections.queue_totals import QueueTotals, queue_totals
from jobledger.server.queue_metrics import job_families
from jobledger.server.sealed_ledger import seal_states

#: Command latencies are mostly well under a millisecond: buckets from 100 µs to 10 s.
LATENCY_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
)  # fmt: skip

#: Scheduler check (as named in ``jobledger.scheduler.loop``) -> the deadline set
#: (``jobledger.ledger.keys``) it works
#: through; a set that this build's keys do not define is left out.
DEADLINE_SETS = {
    check: key
    for check, key in {
        "releases": "due_release",
        "timeouts": "due_run",
        "queued": "due_queued",
        "retries": "due_retry",
        "expiry": "due_expire",
        "launchers": "due_launch",
    }.items()
    if key in TEMPLATES
}


@dataclass(frozen=True)
class LedgerState:
    """What a scrape reads from Redis: each queue's counts, totals and oldest queued job, the stream's
    size, the oldest deadlines, the archive's records."""

    jobs: dict[str, dict[str, int]]
    ledger_length: int
    events_added: int
    oldest_due_ms: dict[str, int | None]
    blobs: SweepCounters = field(default_factory=SweepCounters)
    #: each partition's stream length, on a ledger split into partitions (else empty)
    partition_lengths: list[int] = field(default_factory=list)
    totals: dict[str, QueueTotals] = field(default_factory=dict)
    #: queue -> when its oldest queued job joined it (ms), None when none is queued
    oldest_queued_ms: dict[str, int | None] = field(default_factory=dict)
    #: each partition's archive record (None: it archived nothing yet)
    archives: list[ArchiveRecord | None] = field(default_factory=list)
    #: on a sealed ledger, each partition's oldest event not sealed yet (its ``at``; None: all are)
    seal_waiting: list[int | None] | None = None


@dataclass
class Scrape:
    """One scrape's reading: the state, or None when Redis did not answer; ``now`` in ms."""

    state: LedgerState | None = None
    now_ms: int = 0


def _int(value: Any) -> int:
    return int(value.decode() if isinstance(value, bytes) else value)


def _entries_added(reply: Any) -> int | None:
    """``entries-added`` of an ``XINFO STREAM`` reply (flat list in RESP2, a map in RESP3)."""
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
    for name, value in pairs:
        if (name.decode() if isinstance(name, bytes) else name) == "entries-added":
            return _int(value)
    return None


def _first_score(reply: Any) -> int | None:
    """The score of ``ZRANGE key 0 0 WITHSCORES``: pairs, or a flat list on older redis-py."""
    pairs = score_pairs(reply)
    return int(pairs[0][1]) if pairs else None


def _stream_read(info: dict[str, Any]) -> Read[LedgerState]:
    """Stream length and oldest deadlines in one round trip; ``XINFO STREAM`` in a second one when
    the stream exists (it errs on a missing key).  ``entries-added`` counts events ever appended,
    so it keeps counting up when archival trims the stream; without it (older servers) the length."""
    checks = list(DEADLINE_SETS)

    def commands(k: Keys) -> list[tuple[Any, ...]]:
        oldest = [("ZRANGE", k.build(DEADLINE_SETS[c]), 0, 0, "WITHSCORES") for c in checks]
        return [("EXISTS", k.events), ("XLEN", k.events), *oldest]

    def state(length: int, added: int | None, r: list[Any]) -> LedgerState:
        due = {c: _first_score(hit) for c, hit in zip(checks, r, strict=True)}
        return LedgerState(info["queues"], length, length if added is None else added, due)

    def parse(r: list[Any]) -> LedgerState | Read[LedgerState]:
        length = _int(r[1])
        if not _int(r[0]):
            return state(length, None, r[2:])
        return Read(lambda k: [("XINFO", "STREAM", k.events)],
                    lambda x: state(length, _entries_added(x[0]), r[2:]))  # fmt: skip

    return Read(commands, parse, spread(_whole))


def _oldest(found: list[int | None]) -> int | None:
    due = [at for at in found if at is not None]
    return min(due) if due else None


def _whole(parts: list[LedgerState]) -> LedgerState:
    """The partitions' states as one (their ``/info`` is already the whole ledger's)."""
    lengths = [p.ledger_length for p in parts]
    oldest = {check: _oldest([p.oldest_due_ms[check] for p in parts]) for check in parts[0].oldest_due_ms}
    added = sum(p.events_added for p in parts)
    return replace(parts[0], ledger_length=sum(lengths), events_added=added, oldest_due_ms=oldest,
                   partition_lengths=lengths)  # fmt: skip


async def read_state(ledger: OpeningLedger, sealed: bool = False) -> LedgerState:
    """Everything a scrape needs from Redis (a few pipelined round trips, each partition's at once);
    the blob collector keeps its counters in the home partition.  ``sealed``: the seal lag too."""
    info = await ledger.read(readers.info())
    names = list(info["queues"])
    state = await ledger.read(_stream_read(info))
    state = replace(
        state,
        blobs=await ledger.read(replace(sweep_counters(), route=HOME)),
        totals=await ledger.read(queue_totals(names)),
        oldest_queued_ms=await ledger.read(readers.oldest_queued(names)),
        archives=await ledger.read(_archive_records()),
    )
    if sealed:
        found = await seal_states(await ledger.opened())
        state = replace(state, seal_waiting=[s.waiting for s in found])
    return state


def _archive_records() -> Read[list[ArchiveRecord | None]]:
    """Every partition's archive record, in partition order."""
    return Read(
        lambda k: [("HGETALL", archive_key(k))],
        lambda r: [parse_record(r[0])],
        spread(lambda parts: [found for part in parts for found in part]),
    )


def _lag_seconds(oldest_ms: int | None, now_ms: int) -> float:
    """How long the oldest deadline of a set has been due; 0 when none has come yet."""
    return 0.0 if oldest_ms is None or oldest_ms > now_ms else (now_ms - oldest_ms) / 1000


class LedgerCollector(Collector):
    """Metric families from the latest :class:`Scrape`; the handler sets it just before rendering
    (with no await between, so concurrent scrapes cannot mix their readings)."""

    def __init__(self) -> None:
        self.scrape = Scrape()

    def describe(self) -> list[Metric]:
        return []  # nothing to check for clashes: the registry must not collect at registration

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("jobledger_redis_up", "1 when Redis answered this scrape, else 0.")
        up.add_metric([], 0 if self.scrape.state is None else 1)
        yield up
        if self.scrape.state is not None:
            yield from _state_families(self.scrape.state, self.scrape.now_ms)


def _state_families(state: LedgerState, now_ms: int) -> Iterator[Metric]:
    yield from job_families(state.jobs, state.totals, state.oldest_queued_ms, now_ms)
    yield from _ledger_families(state)
    yield _lag_family(state.oldest_due_ms, now_ms)
    if state.seal_waiting is not None:
        yield _seal_family(state.seal_waiting, now_ms)
    yield from _blob_families(state.blobs)


def _archive_position_ms(archives: list[ArchiveRecord | None]) -> int | None:
    """When the newest archived event was appended, in the partition furthest behind (None when
    none archived anything); an event id's first part is its time in ms."""
    archived = [a for a in archives if a is not None]
    return min(id_key(a.last_id)[0] for a in archived) if archived else None


def _ledger_families(state: LedgerState) -> Iterator[Metric]:
    """The ledger's own figures: events appended, the stream's length, the archive's position (and
    the seal's lag, once sealing records one)."""
    yield CounterMetricFamily(
        "jobledger_events", "Events ever appended to the ledger (trimmed ones included).", state.events_added
    )
    yield GaugeMetricFamily(
        "jobledger_ledger_length", "Events now in the ledger stream (XLEN).", state.ledger_length
    )
    if state.partition_lengths:
        each = GaugeMetricFamily(
            "jobledger_partition_length",
            "Events now in each partition's stream (XLEN).",
            labels=["partition"],
        )
        for partition, length in enumerate(state.partition_lengths):
            each.add_metric([str(partition)], length)
        yield each
    yield CounterMetricFamily(
        "jobledger_archived_events",
        "Events moved from the ledger's stream to the archive by retention.",
        sum(a.count for a in state.archives if a is not None),
    )
    position = _archive_position_ms(state.archives)
    if position is not None:
        yield GaugeMetricFamily(
            "jobledger_archive_position_timestamp_seconds",
            "When the newest archived event was appended (of the partition furthest behind).",
            position / 1000,
        )


def _seal_family(waiting: list[int | None], now_ms: int) -> Metric:
    seal = GaugeMetricFamily(
        "jobledger_seal_lag_seconds",
        "How long the oldest event not yet sealed in a signed checkpoint has waited, by partition "
        "(0 when every event is sealed).",
        labels=["partition"],
    )
    for partition, oldest in enumerate(waiting):
        seal.add_metric([str(partition)], _lag_seconds(oldest, now_ms))
    return seal


def _lag_family(oldest_due_ms: dict[str, int | None], now_ms: int) -> Metric:
    lag = GaugeMetricFamily(
        "jobledger_scheduler_lag_seconds",
        "How overdue the oldest due item of each scheduler check's deadline set is (0 when none is due).",
        labels=["check"],
    )
    for check, oldest in oldest_due_ms.items():
        lag.add_metric([check], _lag_seconds(oldest, now_ms))
    return lag


def _blob_families(blobs: SweepCounters) -> Iterator[Metric]:
    yield CounterMetricFamily(
        "jobledger_blobs_swept", "Blobs the collector deleted, unreferenced for the grace.", blobs.swept
    )
    yield CounterMetricFamily(
        "jobledger_blobs_swept_bytes", "Bytes of the blobs the collector deleted.", blobs.swept_bytes
    )
    yield CounterMetricFamily(
        "jobledger_blob_staging_removed", "Staging left by stopped uploads, removed.", blobs.staging
    )


class Registry:
    """One app's registry: the command latency histogram, the live feeds open, and the collector of
    the ledger's state."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.commands = Histogram(
            "jobledger_command_seconds",
            "Time to run one ledger command (one Lua script), by script.",
            labelnames=["command"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.feeds = Gauge(
            "jobledger_feeds_open",
            "Live feeds (/events/stream and the dashboard's) this process is serving.",
            registry=self.registry,
        )
        self.ledger = LedgerCollector()
        self.registry.register(self.ledger)

    def render(self, scrape: Scrape) -> bytes:
        self.ledger.scrape = scrape
        return generate_latest(self.registry)


async def scrape(ledger: OpeningLedger, sealed: bool = False) -> Scrape:
    """Read the ledger's state now; an empty reading when Redis does not answer."""
    now = ledger.clock()
    try:
        return Scrape(await read_state(ledger, sealed), now)
    except (Unavailable, redis.RedisError, OSError):  # a down Redis is a value here, not an error
        return Scrape(None, now)


async def metrics(request: Request) -> Response:
    """``GET /metrics``: always 200 (``jobledger_redis_up`` tells whether Redis answered)."""
    registry = request.app.state.metrics.build()
    reading = await scrape(request.state.ledger, sealed=request.state.parts.sealed is not None)
    return Response(registry.render(reading), media_type=CONTENT_TYPE_LATEST)
