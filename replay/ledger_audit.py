"""Auditing a sealed log: are the ledger's events still the ones its signed checkpoints sealed?

:func:`audit_log` checks one log (a partition's) against what was published outside Redis:

1. each checkpoint's signature, the latest one's and every kept one's, and that each (and an
   auditor's own, ``since``) is consistent with the latest: its tree is a prefix of the latest's;
2. that the tiles make the latest checkpoint's root;
3. every event of the ledger, archive then stream, re-hashed up to the latest checkpoint's size and
   compared, leaf by leaf, with the tiles (the hashes) and the id files (which event was where).

It stops at the first difference, named by event and kind: ``altered`` (an event's content
changed), ``removed`` (a sealed event is gone), ``reordered`` (an event holds the content of a
later one), ``inserted`` (an event that was never sealed, among sealed ones), ``truncated`` (the
ledger, or the log, ends before a checkpoint's size), ``bad signature`` (a checkpoint not signed by
the key), ``inconsistent`` (a checkpoint that is no prefix of the latest, or tiles that do not make
its root).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import redis

from jobledger.ledger.event_lines import RawEntry
from jobledger.ledger.keys import Keys
from jobledger.ledger.seal.checkpoints import Checkpoint
from jobledger.ledger.seal.errors import Malformed, ProofFailed, SealError
from jobledger.ledger.seal.hashes import leaf_hash
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.tiles import WIDTH
from jobledger.ledger.seal.verify import verify_consistency
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import ArchiveSource
from jobledger.replay.sealed_log import SealedLog
from jobledger.replay.source import read_ledger

KINDS = ("altered", "removed", "reordered", "inserted", "truncated", "bad signature", "inconsistent")
#: How far ahead a changed event's content is looked for among the sealed ones (``reordered``).
REORDER_WINDOW = 64
#: A sealer at work publishes a checkpoint as two writes, the kept one then the latest, while the
#: audit reads the latest then the kept ones: a kept checkpoint newer than the latest read is looked
#: at again this many times, this many seconds apart, before it is called a truncation.
LATEST_READS, LATEST_PAUSE = 5, 0.2


@dataclass(frozen=True)
class Finding:
    """The first difference: its kind (one of :data:`KINDS`), the event (its id) or checkpoint it
    is about, and what was found."""

    kind: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.where}: {self.message}"


@dataclass
class LogAudit:
    """What :func:`audit_log` checked of one log, and the first difference, if any."""

    origin: str
    size: int = 0
    events: int = 0
    checkpoints: int = 0
    finding: Finding | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.finding is None

    def summary(self) -> str:
        """One line: the first difference, what kept the check short, or what was verified."""
        if self.finding is not None:
            return f"{self.origin}: {self.finding}"
        if self.notes:
            return f"{self.origin}: {'; '.join(self.notes)}"
        return (f"{self.origin}: verified {self.events:,} events against checkpoint {self.size} "
                f"({self.checkpoints} checkpoints signed and consistent)")  # fmt: skip


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _opened(log: SealedLog, note: str | bytes, where: str) -> Checkpoint | Finding:
    try:
        return log.open(note).checkpoint
    except SealError as error:
        return Finding("bad signature", where, str(error))


def _consistent(log: SealedLog, old: Checkpoint, latest: Checkpoint, where: str) -> Finding | None:
    if old.size > latest.size:
        return Finding(
            "truncated", where, f"the log was at size {old.size}; its latest checkpoint is {latest.size}"
        )
    try:
        proof = log.consistency(old.size, latest.size)
        verify_consistency(old.size, latest.size, old.root, latest.root, proof)
    except (ProofFailed, Malformed) as error:
        return Finding("inconsistent", where, f"checkpoint {old.size} is no prefix of the latest: {error}")
    return None


def audit_checkpoints(log: SealedLog, audit: LogAudit, since: str | bytes | None) -> Checkpoint | None:
    """Step 1 and 2 (see the module): the latest checkpoint once they pass; None otherwise (the
    finding in ``audit``) or when nothing was ever sealed."""
    for reads in range(1, LATEST_READS + 1):
        note = log.files.read("checkpoint")
        if note is None:
            audit.notes.append("nothing sealed yet")
            if since is not None:
                audit.finding = Finding("truncated", "the latest checkpoint", "the log has no checkpoint")
            return None
        opened = _opened(log, note, "the latest checkpoint")
        if isinstance(opened, Finding):
            audit.finding = opened
            return None
        latest, history = opened, log.history()
        if max((size for size, _ in history), default=0) <= latest.size or reads == LATEST_READS:
            break
        time.sleep(LATEST_PAUSE)  # published meanwhile: the latest follows its kept checkpoint
    audit.size, audit.checkpoints = latest.size, 1
    try:
        log.checked_nodes(latest)
    except (Malformed, SealError) as error:
        audit.finding = Finding("inconsistent", "the tiles", str(error))
        return None
    kept: list[tuple[str, str | bytes]] = [(f"checkpoint {size}", n) for size, n in history]
    if since is not None:
        kept.insert(0, ("the checkpoint given", since))
    for where, old_note in kept:
        old = _opened(log, old_note, where)
        if isinstance(old, Finding):
            audit.finding = old
            return None
        audit.checkpoints += 1
        audit.finding = _consistent(log, old, latest, where)
        if audit.finding is not None:
            return None
    return latest


class _Sealed:
    """The sealed leaves of a tree, tile by tile: their ids and hashes."""

    def __init__(self, log: SealedLog, size: int) -> None:
        self.log, self.size = log, size
        self.nodes = log.nodes(size)
        self._tile = -1
        self._ids: list[str] = []

    def id(self, index: int) -> str:
        if index // WIDTH != self._tile:
            self._tile = index // WIDTH
            self._ids = self.log.ids(self._tile, self.size)
        return self._ids[index % WIDTH]

    def hash(self, index: int) -> bytes:
        return self.nodes(0, index)


def _hash(entry_id: str, fields: Any) -> bytes | None:
    try:
        return leaf_hash(leaf_bytes(entry_id, fields))
    except Malformed:
        return None


def _difference(sealed: _Sealed, index: int, entry: RawEntry) -> Finding | None:
    """How the ledger's ``index``-th event differs from the sealed one, if it does."""
    entry_id, fields = _s(entry[0]), entry[1]
    expected = sealed.id(index)
    if entry_id == expected:
        if _hash(entry_id, fields) == sealed.hash(index):
            return None
        for later in range(index + 1, min(sealed.size, index + 1 + REORDER_WINDOW)):
            if _hash(sealed.id(later), fields) == sealed.hash(later):
                return Finding("reordered", entry_id, f"holds the content sealed as event {sealed.id(later)}")
        return Finding("altered", entry_id, f"its content is not the one sealed at index {index}")
    if id_key(entry_id) > id_key(expected):
        if index == 0:  # the ledger's first events are gone: cut from its start
            return Finding("truncated", expected, "the ledger's first sealed events are gone")
        return Finding("removed", expected, f"sealed at index {index}, no longer in the ledger")
    return Finding("inserted", entry_id, f"was never sealed; index {index} is event {expected}")


def _entries(client: redis.Redis, keys: Keys, archive: ArchiveSource | None) -> Iterator[RawEntry]:
    for batch in read_ledger(client, keys, archive=archive):
        yield from batch


def audit_log(
    client: redis.Redis,
    keys: Keys,
    log: SealedLog,
    since: str | bytes | None = None,
    archive: ArchiveSource | None = None,
) -> LogAudit:
    """Audit the log of ``keys``' ledger (see the module), with ``since`` an auditor's checkpoint,
    its archived events read through ``archive``."""
    audit = LogAudit(log.origin)
    latest = audit_checkpoints(log, audit, since)
    if latest is None:
        return audit
    sealed = _Sealed(log, latest.size)
    index = 0
    for entry in _entries(client, keys, archive):
        if index == latest.size:
            break
        audit.finding = _difference(sealed, index, entry)
        if audit.finding is not None:
            return audit
        index += 1
    audit.events = index
    if index < latest.size:
        audit.finding = Finding(
            "truncated", sealed.id(index), f"the ledger ends after {index} events; {latest.size} were sealed"
        )
    return audit
