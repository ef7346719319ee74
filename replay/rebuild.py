"""Rebuild every projection of a ledger from its events alone, into an empty namespace.

Rebuilding is a fold over events, in order, through the same ``apply`` the live commands call.  The
stream is folded where it is: the ``fold_stream`` script reads a batch of it and applies it, so
the events never travel to the client and back.  What that script leaves to the client (archived
events, which :func:`jobledger.replay.source.read_ledger` reads before the stream; events written at an
older schema version, upcast to the current one first so that ``apply`` only knows current data;
a server that will not run one script over two namespaces) is read here in batches and handed to
the ``apply_events`` script.

On that path reading and applying overlap: a thread reads and flattens the next batches while the
server applies the current one (Redis runs one script at a time, so applying is the floor of the
cost; the Python work of decoding replies and packing arguments hides behind it).
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from jobledger.ledger.event_lines import RawEntry
from jobledger.ledger.events import EVENT_TYPES, upcast
from jobledger.ledger.keys import Keys
from jobledger.ledger.scripts import source as script_source
from jobledger.projections.archive import ArchiveRecord, ArchiveSource, archive_key, load_record
from jobledger.replay.progress import Callback
from jobledger.replay.source import read_ledger

T = TypeVar("T")

#: How many batches the reader thread may run ahead of the applier.
PREFETCH = 3
_CURRENT = {name.encode(): str(cls.version).encode() for name, cls in EVENT_TYPES.items()}


class NamespaceNotEmpty(Exception):
    """Rebuilding into a namespace that already holds keys would mix two states."""


class UnknownEventType(Exception):
    """An event whose type this version of jobledger does not know: it cannot be applied."""


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def current_data(entry_id: bytes, fields: dict[bytes, bytes]) -> bytes:
    """The event's data at the current version of its type (the stored bytes when already current)."""
    type_ = fields[b"type"]
    current = _CURRENT.get(type_)
    if current is None:
        raise UnknownEventType(f"event {_s(entry_id)} has type {_s(type_)!r}, unknown to this jobledger")
    version = fields.get(b"v", b"1")
    data = fields.get(b"data") or b"{}"
    if version == current:
        return data
    raised = upcast(type_.decode(), int(version), json.loads(data))
    return json.dumps(raised, separators=(",", ":")).encode()


def flatten(entries: Iterable[RawEntry]) -> list[bytes]:
    """``apply_events``' arguments: six per event (id, type, at, job, queue, current data)."""
    args: list[bytes] = []
    for entry_id, f in entries:
        data = current_data(entry_id, f)
        args += (entry_id, f[b"type"], f[b"at"], f.get(b"job", b""), f.get(b"queue", b""), data)
    return args


def prefetch(items: Iterator[T], depth: int = PREFETCH) -> Iterator[T]:
    """``items``, produced by a thread of their own up to ``depth`` ahead of the consumer.  An
    exception in the producer is raised in the consumer; a consumer that stops stops the thread."""
    out: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # noqa: BLE001 (handed to the consumer, which raises it)
            put(("error", exc))

    thread = threading.Thread(target=produce, name="replay-reader", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = out.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        thread.join()


def ensure_empty(client: redis.Redis, keys: Keys) -> None:
    for _ in client.scan_iter(match=keys.pattern(), count=1000):
        raise NamespaceNotEmpty(f"namespace '{keys.namespace}' is not empty; rebuild needs an empty one")


@dataclass(frozen=True)
class ServerFold:
    """What one ``fold_stream`` call applied, and why it ended."""

    count: int
    last_id: str | None
    stopped: bool  # before an event only the client can apply (an older version), or archived events
    full: bool  # it read as many events as it was allowed: there may be more


class Applier:
    """Applies events to one namespace's projections: a fresh namespace's (``target`` its name), or
    one generation's (``target`` its :class:`Keys`).  Batches of raw entries go through
    ``apply_events``; a ledger's stream can also be folded where it is, by ``fold_stream``."""

    def __init__(self, client: redis.Redis, target: str | Keys) -> None:
        self.client = client
        self.prefix = (target if isinstance(target, Keys) else Keys(target)).prefix
        self.script = client.register_script(script_source("apply_events"))
        self.stream_script = client.register_script(script_source("fold_stream"))
        self.drop_script = client.register_script(script_source("drop_archived_histories"))

    def apply(self, args: list[bytes]) -> None:
        """Apply flattened events (see :func:`flatten`), in order, in one script call."""
        if args:
            self.script(keys=[self.prefix], args=args)

    def drop_archived(self, archived_to: str, jobs: Iterable[int]) -> None:
        """After archived events were applied: delete the history lists retention deleted from the
        live ledger when it archived them (``drop_archived_history.lua``), of ``jobs``, with
        ``archived_to`` the source ledger's archived position."""
        if jobs := sorted(set(jobs)):
            self.drop_script(keys=[self.prefix], args=[archived_to, *jobs])

    def fold_stream(self, source: Keys, after: str | None, until: str | None, most: int) -> ServerFold | None:
        """Apply up to ``most`` events of ``source``'s stream after ``after`` (up to ``until``), read
        by the script itself: no event travels to the client and back.  None when the server will not
        run one script over two namespaces (a cluster puts them in different slots)."""
        keys = [self.prefix, source.events, archive_key(source)]
        try:
            count, last, stopped, full = self.stream_script(keys=keys, args=[after or "", until or "", most])
        except redis.exceptions.ClusterCrossSlotError:  # redis-py names the error by its class alone
            return None
        except redis.ResponseError as exc:
            if "CROSSSLOT" in str(exc):
                return None
            raise
        return ServerFold(int(count), _s(last) or None, bool(stopped), bool(full))


@dataclass(frozen=True)
class Folded:
    """What a fold applied: how many events, and the id of the last one (None if none)."""

    count: int
    last_id: str | None


def fold(
    client: redis.Redis,
    source: str,
    applier: Applier,
    after: str | None = None,
    until: str | None = None,
    batch: int = 2000,
    progress: Callback | None = None,
    archive: ArchiveSource | None = None,
) -> Folded:
    """Apply the events of ``source``'s ledger after ``after`` up to ``until`` (ids; both optional).

    The stream is folded on the server (``fold_stream``) as far as it can be; the rest (archived
    events, events at an older version of their type, a server that will not run the script over
    two namespaces) is read here, upcast, and applied with ``apply_events``: the same ``apply()``.
    After each batch of archived events, the history lists retention removed from the live ledger
    as it archived them are removed as well (:meth:`Applier.drop_archived`), so that the projections
    are exactly the live ones."""
    done, last = 0, None
    while (step := applier.fold_stream(Keys(source), last or after, until, batch)) is not None:
        done += step.count
        last = step.last_id or last
        if step.count and progress:
            progress(done)
        if step.stopped:
            break
        if not step.full:
            return Folded(done, last)
    rec = load_record(client, Keys(source))
    batches = (
        (flatten(entries), len(entries), _s(entries[-1][0]), _archived_jobs(rec, entries))
        for entries in read_ledger(client, Keys(source), last or after, until, batch, archive)
    )
    for args, count, last_id, jobs in prefetch(batches):
        applier.apply(args)
        if rec is not None:
            applier.drop_archived(rec.last_id, jobs)
        done += count
        last = last_id
        if progress:
            progress(done)
    return Folded(done, last)


def _archived_jobs(rec: ArchiveRecord | None, entries: list[RawEntry]) -> set[int]:
    """The jobs of the archived entries among ``entries``."""
    if rec is None:
        return set()
    return {
        int(job) for entry_id, fields in entries if rec.holds(_s(entry_id)) and (job := fields.get(b"job"))
    }


def rebuild(
    client: redis.Redis,
    source: str,
    target: str,
    until: str | None = None,
    batch: int = 2000,
    progress: Callback | None = None,
    into: redis.Redis | None = None,
    archive: ArchiveSource | None = None,
) -> int:
    """Apply every event of ``source``'s ledger (up to the event id ``until``, inclusive) to the
    empty namespace ``target`` (through ``into`` when another client reaches it, as on a Cluster
    where it lies on another node); the number of events applied.  The target receives projections
    only, no stream.  Archived events are read through ``archive``."""
    writer = into or client
    ensure_empty(writer, Keys(target))
    return fold(client, source, Applier(writer, target), None, until, batch, progress, archive).count
