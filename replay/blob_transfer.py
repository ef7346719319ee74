"""``events export --blobs DIR`` / ``events import --blobs DIR``: the blobs a ledger refers to travel
beside its events, in a directory laid out as a local blob store (``DIR/sha256/ab/<hex>``).

Which blobs: the events are followed as the ``blobs`` projection follows them — ``job_created``
names a job's files, ``job_result_added`` a result (replacing one of the same name), ``job_expired``
and ``job_deleted`` drop the job's — to tell the blobs still *live* at the end (named by a job the
ledger still holds) from those only named in the past, which the collector may have swept already.

- Export copies every live blob from the store into DIR, each verified against its name as it is
  written (the copy is hashed on the way); a live blob the store lacks is an error, as the exported
  ledger could not be served.  A past blob is copied when the store still holds it, else skipped.
- Import puts every blob of DIR the events name into the target's store, each verified likewise,
  *before* any event is appended; a live blob that is neither in DIR nor in the target's store
  refuses the import, naming the blob and the jobs that refer to it, and nothing is appended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from jobledger.blobs.local import LocalBlobStore
from jobledger.blobs.store import BlobStore
from jobledger.ledger.event_lines import RawEntry
from jobledger.replay.blob_audit import Referenced

DROPPED = (b"job_expired", b"job_deleted")


class BlobTransferError(Exception):
    """A blob the events refer to cannot be carried: not in the store, or not its bytes."""


@dataclass
class EventBlobs:
    """The blobs the events refer to: ``live`` (named by a job still in the ledger at the end) and
    ``past`` (named only by jobs gone, or results replaced since); SHA-256 -> size and where."""

    live: dict[str, Referenced] = field(default_factory=dict)
    past: dict[str, Referenced] = field(default_factory=dict)


def event_blobs(batches: Iterable[list[RawEntry]]) -> EventBlobs:
    """Follow the events (see the module) and sort the blobs they name into live and past."""
    jobs: dict[bytes, dict[tuple[str, str], tuple[str, int]]] = {}
    every: dict[str, Referenced] = {}
    for entries in batches:
        for _, fields in entries:
            kind, job = fields.get(b"type"), fields.get(b"job", b"")
            if kind in DROPPED:
                jobs.pop(job, None)
                continue
            if kind == b"job_created":
                refs = [("file", r) for r in json.loads(fields.get(b"data", b"{}")).get("files") or []]
            elif kind == b"job_result_added":
                refs = [("result", json.loads(fields[b"data"]))]
            else:
                continue
            held = jobs.setdefault(job, {})
            for what, ref in refs:
                held[(what, ref["name"])] = (ref["sha256"], int(ref["size"]))
                every.setdefault(ref["sha256"], Referenced(int(ref["size"])))
    found = EventBlobs()
    for job, held in jobs.items():
        for (what, name), (sha256, size) in held.items():
            entry = found.live.setdefault(sha256, Referenced(size))
            entry.by.append(f"job {job.decode()} {what} {name}")
    found.past = {sha: ref for sha, ref in every.items() if sha not in found.live}
    return found


@dataclass
class Carried:
    """What a transfer did: blobs copied, bytes copied, blobs already there, past blobs not found."""

    copied: int = 0
    bytes: int = 0
    present: int = 0
    skipped: int = 0


async def _copy(source: BlobStore, target: BlobStore, sha256: str, carried: Carried) -> None:
    blob = await target.put(source.read(sha256), expected_sha256=sha256)
    carried.copied += 1
    carried.bytes += blob.size


def _missing(sha256: str, ref: Referenced, where: str) -> BlobTransferError:
    return BlobTransferError(f"blob {sha256}, referred to by {', '.join(ref.by)}, is not in {where}")


async def export_blobs(blobs: EventBlobs, store: BlobStore, directory: Path) -> Carried:
    """Copy the blobs the events refer to from ``store`` into ``directory`` (see the module)."""
    target, carried = LocalBlobStore(directory), Carried()
    for sha256, ref in sorted(blobs.live.items()):
        if await target.stat(sha256) is not None:
            carried.present += 1
        elif await store.stat(sha256) is None:
            raise _missing(sha256, ref, store.description)
        else:
            await _copy(store, target, sha256, carried)
    for sha256 in sorted(blobs.past):
        if await target.stat(sha256) is not None:
            carried.present += 1
        elif await store.stat(sha256) is None:
            carried.skipped += 1
        else:
            await _copy(store, target, sha256, carried)
    return carried


async def import_blobs(blobs: EventBlobs, directory: Path, store: BlobStore) -> Carried:
    """Put the blobs the events refer to from ``directory`` into ``store``; every live one must be
    in one of the two, checked before any is copied (see the module)."""
    source, carried = LocalBlobStore(directory), Carried()
    for sha256, ref in sorted(blobs.live.items()):
        if await source.stat(sha256) is None and await store.stat(sha256) is None:
            raise _missing(sha256, ref, f"{directory} nor in {store.description}")
    for sha256 in sorted([*blobs.live, *blobs.past]):
        if await source.stat(sha256) is not None:
            await _copy(source, store, sha256, carried)
        elif await store.stat(sha256) is not None:
            carried.present += 1
        else:
            carried.skipped += 1
    return carried
