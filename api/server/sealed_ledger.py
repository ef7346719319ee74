"""What the server reads of the sealed ledger: each partition's published log, its latest checkpoint,
the seal lag, and a job's receipt.

The logs are read from their files outside Redis (:class:`~jobledger.replay.sealed_log.SealedLog`),
with the verifier key of the configured signing key; only the events' own bytes (their leaves) come
from the ledger, from the stream or the archive.  A server that seals (its scheduler runs) makes the
key on its first start; any other server reads the key that is there, and serves no proof without
one.  Reading files blocks: the async functions here run them in a thread.

A job's receipt is made only once every event of the job is sealed (:class:`NotSealed` otherwise:
the sealer publishes at least every ``seal_interval``, so asking again after it finds them).  A
receipt of part of a job's history would read as the whole of it, and a receipt cannot say that the
job has no other event.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from typing import Any

from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.partitioned import AsyncPartitioned
from jobledger.ledger.runner import AsyncLedger
from jobledger.ledger.seal.checkpoints import Checkpoint
from jobledger.ledger.seal.errors import Malformed, SealError
from jobledger.ledger.seal.hashes import to_base64
from jobledger.ledger.seal.keys import VerifierKey
from jobledger.ledger.seal.leaves import leaf_bytes, stream_order
from jobledger.ledger.seal.tiles import WIDTH
from jobledger.projections.archive import ArchiveSource, find_entries, record
from jobledger.projections.history import job_entries
from jobledger.projections.readers import stream_entries
from jobledger.replay.sealed_log import SealedLog
from jobledger.runtime.config import Config
from jobledger.scheduler.sealer import SealSettings, SealState, seal_settings, seal_state

log = logging.getLogger("jobledger.api")

CHANGED = "the ledger differs from what was sealed (run jobledger ledger verify)"


class NotSealed(Conflict):
    """Some of what was asked is not sealed yet; ``retry_after``: seconds until it should be."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def served_seal(config: Config, create: bool) -> SealSettings | None:
    """The ledger's sealing as this server reads it: None when ``[ledger] seal`` is off, or when the
    key is not there and ``create`` (a sealing server's first start) is not given (said in the log)."""
    if create:
        return seal_settings(config)
    try:
        return seal_settings(config, create=False)
    except (OSError, Malformed) as exc:
        log.warning("no proofs of the ledger served: its signing key cannot be read: %s", exc)
        return None


@dataclass
class ServedLogs:
    """The sealed logs of one ledger (``namespace``), each partition's read with ``settings``' key."""

    settings: SealSettings
    namespace: str
    #: where the ledger's archived events are read (None: nothing archived to read)
    archive: ArchiveSource | None = None
    _logs: dict[int | None, SealedLog] = field(default_factory=dict)

    @property
    def key(self) -> VerifierKey:
        return self.settings.signer.verifier

    @property
    def retry_after(self) -> int:
        """Seconds after which what is not sealed yet should be: two sealing intervals."""
        return max(1, math.ceil(2 * self.settings.interval_ms / 1000))

    def log(self, partition: int | None) -> SealedLog:
        """The log of ``partition`` (None: the ledger is one partition)."""
        if partition not in self._logs:
            self._logs[partition] = self.settings.log_of(self.namespace, partition)
        return self._logs[partition]

    def each(self, router: AsyncPartitioned) -> list[SealedLog]:
        """Every partition's log, in partition order."""
        return [self.log(log_partition(router, p)) for p in range(router.partitioning.count)]


def log_partition(router: AsyncPartitioned, partition: int) -> int | None:
    """The log's name for partition ``partition``: None on a ledger of one partition."""
    return None if router.partitioning.count == 1 else partition


def latest(log: SealedLog) -> tuple[str, Checkpoint] | None:
    """The latest checkpoint's note and what it says, its signature checked; None before the first."""
    note = log.latest_note()
    if note is None:
        return None
    return note, log.open(note).checkpoint


def last_sealed(log: SealedLog, checkpoint: Checkpoint) -> str | None:
    """The id of the last event ``checkpoint`` seals (from the published id files)."""
    size = checkpoint.size
    return log.ids((size - 1) // WIDTH, size)[-1] if size else None


@dataclass(frozen=True)
class Published:
    """A log's latest checkpoint as the dashboard shows it: its note and what it says, or why it
    cannot be read (a bad signature, a file that is not a checkpoint)."""

    origin: str
    note: str | None = None
    checkpoint: Checkpoint | None = None
    error: str | None = None

    @property
    def root(self) -> str | None:
        """The root hash, base64, as the note writes it."""
        return None if self.checkpoint is None else to_base64(self.checkpoint.root)


def published(log: SealedLog) -> Published:
    """The log's latest checkpoint, its signature checked."""
    try:
        found = latest(log)
    except (SealError, OSError) as exc:
        return Published(log.origin, error=str(exc))
    return Published(log.origin) if found is None else Published(log.origin, found[0], found[1])


@dataclass(frozen=True)
class JobSeal:
    """How far a job's events are sealed: ``sealed`` of ``events``, in the latest checkpoint ``size``."""

    events: int
    sealed: int
    size: int

    @property
    def whole(self) -> bool:
        return self.sealed == self.events


def _id(entry_id: str | bytes) -> str:
    return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)


def _leaf(event_id: str, fields: Any) -> bytes:
    """The event's leaf bytes; an event that has none was never sealed as it is (409)."""
    try:
        return leaf_bytes(event_id, fields)
    except Malformed as exc:
        raise Conflict(f"{CHANGED}: {exc}") from exc


def _leaves(entries: list[Any]) -> list[tuple[str, bytes]]:
    return [(_id(entry_id), _leaf(_id(entry_id), fields)) for entry_id, fields in entries]


def _count_sealed(log: SealedLog, ids: list[str]) -> JobSeal:
    found = latest(log)
    if found is None:
        return JobSeal(len(ids), 0, 0)
    last = last_sealed(log, found[1])
    sealed = 0 if last is None else sum(stream_order(i) <= stream_order(last) for i in ids)
    return JobSeal(len(ids), sealed, found[1].size)


async def job_seal(logs: ServedLogs, router: AsyncPartitioned, job_id: int) -> JobSeal:
    """How far the job's events are sealed (NotFound for a job id never used)."""
    entries = await job_entries(router.for_id(job_id), job_id, logs.archive)
    log = logs.log(log_partition(router, router.partitioning.of_id(job_id)))
    ids = [_id(entry_id) for entry_id, _ in entries]
    return await asyncio.to_thread(_count_sealed, log, ids)


def _receipt(
    logs: ServedLogs, log: SealedLog, job_id: int, leaves: list[tuple[str, bytes]]
) -> dict[str, Any]:
    found = latest(log)
    last = None if found is None else last_sealed(log, found[1])
    waiting = [i for i, _ in leaves if last is None or stream_order(i) > stream_order(last)]
    if found is None or waiting:
        raise NotSealed(
            f"{len(waiting)} of the {len(leaves)} events of job {job_id} are not sealed yet: "
            f"retry after about {logs.retry_after}s",
            logs.retry_after,
        )
    try:
        return log.receipt(job_id, found[0], logs.key, leaves)
    except (LookupError, SealError) as exc:
        raise Conflict(f"{CHANGED}: {exc}") from exc


async def job_receipt(logs: ServedLogs, router: AsyncPartitioned, job_id: int) -> dict[str, Any]:
    """The receipt of every event of the job against the latest checkpoint of its partition's log;
    NotFound for a job id never used, :class:`NotSealed` while some event is not sealed yet."""
    leaves = _leaves(await job_entries(router.for_id(job_id), job_id, logs.archive))
    log = logs.log(log_partition(router, router.partitioning.of_id(job_id)))
    return await asyncio.to_thread(_receipt, logs, log, job_id, leaves)


async def event_leaf(runner: AsyncLedger, event_id: str, archive: ArchiveSource | None) -> bytes:
    """The leaf bytes of the event ``event_id`` of a partition, from the stream or the archive;
    NotFound when it is in neither."""
    found = (await runner.read(stream_entries([event_id]))).get(event_id)
    if found is None and (rec := await runner.read(record())) is not None:
        found = (await asyncio.to_thread(find_entries, archive, rec, [event_id])).get(event_id)
    if found is None:
        raise NotFound(f"no event {event_id} in the ledger")
    return _leaf(event_id, found[1])


async def seal_states(router: AsyncPartitioned) -> list[SealState]:
    """Each partition's :class:`SealState`, in partition order."""
    return list(await asyncio.gather(*(r.read(seal_state()) for r in router.runners)))
