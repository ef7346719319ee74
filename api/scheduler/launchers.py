"""The scheduler's two launcher checks: fire the launchers whose time has come, and trigger the
@event launchers on the events that match them.

Times are computed here (Lua cannot run croniter) and passed to the scripts, which decide: a
``fire_launcher`` acts only while the launcher's ``next_at`` is still the time it was computed from,
and a ``trigger_launcher`` only for an event after the launcher's last trigger, so any number of
schedulers may run these checks side by side.

Each check is written once, as steps (:data:`jobledger.ledger.runner.Steps`) that the sync and the
async runner both drive: the fire and trigger commands of a batch go in one pipeline, and a launcher
the ledger refuses does not keep the others from firing (see :meth:`jobledger.ledger.runner.Ledger.drive`).
They run as the ``scheduler`` actor; what a launcher's firing appends records ``launcher:ID``.

On a ledger split into partitions, each partition's check handles that partition's launchers (they
live in their queue's partition), and its @event launchers follow the events of every partition their
filters may match in: the check reads those partitions' streams through the router (:class:`Where`),
and the launcher keeps its last trigger per stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TypeVar

from jobledger.ledger import commands
from jobledger.ledger.clock import Clock
from jobledger.ledger.events import SCHEDULER
from jobledger.ledger.launchers import catch_up, first_at
from jobledger.ledger.partitioned import AsyncPartitioned, Partitioned
from jobledger.ledger.partitions import Partitioning, partition_route, queue_route
from jobledger.ledger.reads import Read
from jobledger.ledger.runner import AsyncLedger, Ledger, Steps
from jobledger.ledger.stream import id_key, newest
from jobledger.projections import launchers as readers
from jobledger.projections.launchers import DueLauncher, EventLauncher

T = TypeVar("T")

BATCH = 500
#: fire_launcher's answers: a launcher it held back (it stays due), and one the script would release
#: once told how many firing times it missed
HELD = 5
TO_RELEASE = 6


@dataclass(frozen=True)
class Where:
    """Where a launcher check runs: the partition whose launchers it checks, of a ledger split into
    ``partitioning`` (None: a ledger of one partition, where nothing is routed)."""

    partitioning: Partitioning | None = None
    partition: int = 0

    @property
    def count(self) -> int:
        return 1 if self.partitioning is None else self.partitioning.count

    def on(self, read: Read[T], partition: int | None = None) -> Read[T]:
        """``read`` of this check's partition's keys (of ``partition``'s, when given)."""
        if self.partitioning is None:
            return read
        return replace(read, route=partition_route(self.partition if partition is None else partition))

    def unplaced(self, launchers: list[EventLauncher]) -> list[Read[None]]:
        """A read of each queue the launchers' filters name whose partition this process has not
        looked up: the router looks it up to route it (and caches it, for :meth:`sources`)."""
        if self.partitioning is None:
            return []
        named = {str(q) for lr in launchers if (q := lr.filter.get("queue"))}
        missing = sorted(q for q in named if q not in self.partitioning.placed)
        return [_probe(q) for q in missing]

    def sources(self, launcher: EventLauncher) -> set[int]:
        """The other partitions whose events ``launcher`` may match: its filter's queue's (every one
        while its queue is placed nowhere), or all."""
        if self.partitioning is None:
            return set()
        queue = launcher.filter.get("queue")
        every = set(self.partitioning.placed_or_every(queue)) if queue else set(range(self.count))
        return every - {self.partition}


def _probe(queue: str) -> Read[None]:
    """A read routed to ``queue``'s partition, made for the lookup that routes it."""
    return Read(lambda k: [("EXISTS", k.queue(queue))], lambda _: None, queue_route(queue))


#: A ledger of one partition.
ONE = Where()


def _catch_up(d: DueLauncher, now: int) -> tuple[int | None, int]:
    return catch_up(d.type, d.arguments, d.due_at, now, d.tz)


def _fire_call(d: DueLauncher, now: int) -> commands.Call[int]:
    """The fire command of a due launcher.  A held-back one's firing times since it was held are not
    counted: the script asks for the count only when it would release it (``TO_RELEASE``)."""
    if d.held:
        return commands.fire_launcher(d.id, d.due_at, first_at(d.type, d.arguments, now, d.tz), None)
    return commands.fire_launcher(d.id, d.due_at, *_catch_up(d, now))


def _fire_steps(now: int, batch: int, where: Where = ONE) -> Steps[list[int]]:
    """Fire (or skip) every launcher due by ``now``; the ids of those that fired, skipped or were
    released.  A held-back launcher stays due, so the due ones are read past those that stay."""
    handled: list[int] = []
    offset = 0
    while True:
        due: list[DueLauncher] = yield where.on(readers.due_launchers(now, batch, offset))
        results: list[int] = (yield [_fire_call(d, now) for d in due]) if due else []
        releasing = [i for i, done in enumerate(results) if done == TO_RELEASE]
        if releasing:
            calls = [
                commands.fire_launcher(due[i].id, due[i].due_at, *_catch_up(due[i], now)) for i in releasing
            ]
            released: list[int] = yield calls
            results = [*results]
            for i, done in zip(releasing, released, strict=True):
                results[i] = done
        handled += [d.id for d, done in zip(due, results, strict=True) if done]
        staying = sum(
            1 for d, done in zip(due, results, strict=True) if done == HELD or (d.held and not done)
        )
        offset += staying
        if len(due) < batch or not (staying or any(results)):
            return handled


def matches(launcher: EventLauncher, fields: dict[str, str]) -> bool:
    """Whether a stream entry matches an @event launcher (the script checks again): its filter's type
    and queue; never a launcher event, nor the creation of a job the launcher made itself."""
    type_ = fields.get("type", "")
    if type_ != launcher.filter.get("type") or type_.startswith("launcher_"):
        return False
    if "queue" in launcher.filter and fields.get("queue") != launcher.filter["queue"]:
        return False
    return not (
        type_ == "job_created" and json.loads(fields.get("data") or "{}").get("launcher") == str(launcher.id)
    )


def _later(a: str, b: str) -> str:
    return a if id_key(a) >= id_key(b) else b


def _own_steps(
    launchers: list[EventLauncher], positions: dict[int, str], batch: int, where: Where
) -> Steps[list[int]]:
    """The launchers' own partition's stream after their last trigger, up to its end as it is now."""
    end: str = yield where.on(newest())
    starts = {lr.id: _later(lr.last_trigger, positions.get(lr.id, "0-0")) for lr in launchers}
    cursor, triggered = min(starts.values(), key=id_key), []
    while id_key(cursor) < id_key(end):
        entries: list[tuple[str, dict[str, str]]] = yield where.on(readers.stream_page(cursor, end, batch))
        if not entries:
            break
        found = [(lr.id, event_id) for event_id, fields in entries for lr in launchers
                 if id_key(event_id) > id_key(starts[lr.id]) and matches(lr, fields)]  # fmt: skip
        results: list[int] = (yield [commands.trigger_launcher(*f) for f in found]) if found else []
        triggered += [launcher_id for (launcher_id, _), done in zip(found, results, strict=True) if done]
        cursor = entries[-1][0]
    positions.update({lr.id: _later(starts[lr.id], end) for lr in launchers})
    return triggered


def _source_steps(launchers: list[EventLauncher], source: int, read: dict[int, str], batch: int,
                  where: Where) -> Steps[list[int]]:  # fmt: skip
    """Another partition's stream for the launchers whose events it may hold: after each one's last
    trigger from it, or after how far this follower read it for that launcher, else from the
    launcher's making on (a launcher never fires on what happened before it was made); up to its end as
    it is now.  ``read`` (launcher id -> last event id of that stream read for it) is moved on."""
    end: str = yield where.on(newest(), source)
    starts: dict[int, str | None] = {}
    for lr in launchers:
        start, seen = lr.triggers.get(source), read.get(lr.id)
        starts[lr.id] = start if seen is None else _later(start or "0-0", seen)
    new = [lr.created_at for lr in launchers if starts[lr.id] is None]
    if new:
        before: str = yield where.on(readers.before_time(min(new)), source)
        starts = {i: before if s is None else s for i, s in starts.items()}
    begun = {i: s for i, s in starts.items() if s is not None}
    cursor, triggered = min(begun.values(), key=id_key), []
    while id_key(cursor) < id_key(end):
        page = readers.stream_page(cursor, end, batch)
        entries: list[tuple[str, dict[str, str]]] = yield where.on(page, source)
        if not entries:
            break
        found = [(lr.id, event_id, fields) for event_id, fields in entries for lr in launchers
                 if id_key(event_id) > id_key(begun[lr.id]) and matches(lr, fields)
                 and (source in lr.triggers or int(fields.get("at") or 0) >= lr.created_at)]  # fmt: skip
        calls = [commands.trigger_launcher(i, event_id, source, fields) for i, event_id, fields in found]
        results: list[int] = (yield calls) if calls else []
        triggered += [i for (i, _, _), done in zip(found, results, strict=True) if done]
        cursor = entries[-1][0]
    read.clear()
    read.update({i: _later(s, end) for i, s in begun.items()})
    return triggered


#: How far a follower read other partitions' streams: partition -> launcher id -> last event id.
SourcesRead = dict[int, dict[int, str]]


def _follow_steps(
    positions: dict[int, str], batch: int, where: Where = ONE, read: SourcesRead | None = None
) -> Steps[list[int]]:
    """Trigger @event launchers on the events after their last trigger, up to the end of the stream as
    it is now, in batches.  ``positions`` (launcher id -> last event id read for it) carries what was
    read from one call to the next, so a launcher that rarely matches is not read for again.  On a
    ledger split into partitions, the launchers of ``where.partition`` follow the other partitions'
    streams too (those their filters may match in); ``read`` carries how far, and holds only the
    partitions followed."""
    read = {} if read is None else read
    launchers: list[EventLauncher] = yield where.on(readers.event_launchers(where.count))
    for gone in set(positions) - {launcher.id for launcher in launchers}:
        del positions[gone]
    if not launchers:
        read.clear()
        return []
    triggered = yield from _own_steps(launchers, positions, batch, where)
    for lookup in where.unplaced(launchers):
        _ = yield lookup  # each is sent its answer: a list's iterator could not take it
    sources = {source for lr in launchers for source in where.sources(lr)}
    for source in sorted(sources):
        concerned = [lr for lr in launchers if source in where.sources(lr)]
        triggered += yield from _source_steps(concerned, source, read.setdefault(source, {}), batch, where)
    for gone in set(read) - sources:
        del read[gone]
    return triggered


def launcher_steps(
    positions: dict[int, str],
    clock: Clock,
    batch: int = BATCH,
    where: Where = ONE,
    read: SourcesRead | None = None,
) -> Steps[tuple[list[int], list[int]]]:
    """Both checks once, events first (so an undebounced match fires now): the launchers triggered,
    and those fired or skipped (by the time on ``clock`` once the events are followed)."""
    triggered = yield from _follow_steps(positions, batch, where, read)
    fired = yield from _fire_steps(clock(), batch, where)
    return triggered, fired


def _where(ledger: Ledger | AsyncLedger | Partitioned | AsyncPartitioned, partition: int) -> Where:
    if isinstance(ledger, Partitioned | AsyncPartitioned) and ledger.partitioning.count > 1:
        return Where(ledger.partitioning, partition)
    return ONE


def follow_event_launchers(
    ledger: Ledger | Partitioned,
    positions: dict[int, str] | None = None,
    batch: int = BATCH,
    partition: int = 0,
    read: SourcesRead | None = None,
) -> list[int]:
    """The event check: trigger @event launchers (of ``partition`` of a split ledger, which follow
    every partition's events) on the events that match them; the id of the launcher of each trigger
    that did something (fired, skipped or moved its firing time)."""
    steps = _follow_steps({} if positions is None else positions, batch, _where(ledger, partition), read)
    return ledger.as_actor(SCHEDULER).drive(steps)


async def check_launchers(
    ledger: AsyncLedger | AsyncPartitioned,
    positions: dict[int, str],
    batch: int = BATCH,
    partition: int = 0,
    read: SourcesRead | None = None,
) -> int:
    """:func:`launcher_steps` on the async runner (or, for ``partition`` of a split ledger, its
    router); how many launchers they acted on."""
    steps = launcher_steps(positions, ledger.clock, batch, _where(ledger, partition), read)
    triggered, fired = await ledger.as_actor(SCHEDULER).drive(steps)
    return len(triggered) + len(fired)
