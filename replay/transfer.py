"""``events export`` and ``events import``: a whole ledger to a JSON-lines file and back.

Export reads the ledger as replay does (archived events, then the stream) and writes one line per
event (:mod:`jobledger.ledger.event_lines`), to a temporary file renamed into place once complete and
flushed to disk, so an interrupted export never leaves a half file under the name asked for.

Import appends the events, with their own ids, to the stream of an empty namespace, and applies
them: the ``import_events`` script XADDs each event and calls the same ``apply`` every command
calls, so the ledger rule holds there too (projections change only by applying an event that is
in the stream).  An exported ledger imported into an empty namespace gives the same stream, entry
for entry (each event's actor included, and no actor where an old entry had none), and the same
projections.

A ledger split into partitions is exported partition by partition, each event naming its partition
(:mod:`jobledger.ledger.event_lines`), and imported into a ledger of the same count, each partition's
events into its partition.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import redis

from jobledger.ledger.event_lines import (
    LedgerFileError,
    RawEntry,
    header_line,
    read_partition_entries,
    write_entries,
)
from jobledger.ledger.keys import Keys
from jobledger.ledger.scripts import source
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import ArchiveSource
from jobledger.replay.parts import Part, ensure_empty_ledger
from jobledger.replay.progress import Callback
from jobledger.replay.rebuild import current_data, ensure_empty, prefetch
from jobledger.replay.source import read_ledger
from jobledger.runtime.private import private_opener


def export_ledger(
    client: redis.Redis,
    namespace: str,
    path: Path,
    until: str | None = None,
    batch: int = 2000,
    progress: Callback | None = None,
    archive: ArchiveSource | None = None,
) -> int:
    """Write every event of the ledger (up to the event id ``until``) to ``path``; how many."""
    return export_parts([Part(0, namespace, client)], path, [until], batch, progress, archive)


def export_parts(
    parts: list[Part],
    path: Path,
    untils: list[str | None],
    batch: int = 2000,
    progress: Callback | None = None,
    archive: ArchiveSource | None = None,
) -> int:
    """Write every event of each partition of a ledger (up to its event id in ``untils``) to
    ``path``, partition by partition, each naming its partition when there are several; how many."""
    partial = path.with_name(path.name + ".partial")
    split = len(parts) > 1
    done = 0
    try:
        with open(partial, "w", encoding="utf-8", opener=private_opener) as handle:  # the whole ledger: 0600
            if split:
                handle.write(header_line(len(parts)) + "\n")
            for part, until in zip(parts, untils, strict=True):
                for entries in prefetch(
                    read_ledger(part.client, Keys(part.namespace), None, until, batch, archive)
                ):
                    done += write_entries(handle, entries, part.index if split else None)
                    if progress:
                        progress(done)
            handle.flush()
            os.fsync(handle.fileno())
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return done


def _import_args(entries: Iterable[RawEntry], previous: str | None) -> tuple[list[bytes], str | None]:
    """``import_events``' arguments for a batch, checking the ids increase (XADD would refuse a
    batch half-way otherwise); and the last id."""
    args: list[bytes] = []
    for entry_id, f in entries:
        text = entry_id.decode()
        if previous is not None and id_key(text) <= id_key(previous):
            raise LedgerFileError(f"event {text} comes after {previous}: the file is not in ledger order")
        previous = text
        data = f.get(b"data", b"{}")
        current = current_data(entry_id, f)
        args += (entry_id, f[b"type"], f[b"v"], f[b"at"], f.get(b"job", b""), f.get(b"queue", b""),
                 f.get(b"actor", b""), data, b"" if current is data else current)  # fmt: skip
    return args, previous


def import_ledger(
    client: redis.Redis,
    namespace: str,
    path: Path,
    batch: int = 1000,
    progress: Callback | None = None,
) -> int:
    """Append and apply every event of the file to the empty namespace ``namespace``; how many."""
    ensure_empty(client, Keys(namespace))
    return import_parts([Part(0, namespace, client)], path, batch, progress)


def import_parts(parts: list[Part], path: Path, batch: int = 1000, progress: Callback | None = None) -> int:
    """Append and apply every event of the file to the empty ledger whose partitions are ``parts``,
    each event into its partition's; how many.  The file must be of as many partitions."""
    ensure_empty_ledger(parts)
    scripts = [part.client.register_script(source("import_events")) for part in parts]

    def batches() -> Iterable[tuple[int, list[bytes], int]]:
        previous: dict[int, str | None] = {}
        for partition, entries in read_partition_entries(path, batch):
            if partition >= len(parts):
                raise LedgerFileError(f"{path} holds partition {partition}; the ledger has {len(parts)}")
            args, previous[partition] = _import_args(entries, previous.get(partition))
            yield partition, args, len(entries)

    done = 0
    for partition, args, count in prefetch(iter(batches())):
        scripts[partition](keys=[Keys(parts[partition].namespace).ledger_prefix], args=args)
        done += count
        if progress:
            progress(done)
    return done
