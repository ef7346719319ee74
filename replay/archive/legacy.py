"""Moving an archive kept in a directory, as retention wrote it before the archive went to the blob
store (``<archive_dir>/<namespace>/``: segment files and ``manifest.jsonl``), into the blob store.

The archiver does it once, at its first round, under the archive lock: it copies every segment of
the manifest into the store (each checked against the SHA-256 the manifest gives, and given the
link to the segment before it), then switches the ledger's record to the store in one script
(``archive_relocate``).  Until then the readers refuse the archived events with a message saying
so; afterwards the directory is no longer read and may be removed.  A crash half way leaves the
record as it was, and the next round copies again (the same names, the same bytes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from jobledger.ledger.stream import id_key
from jobledger.projections.archive import ArchiveError, ArchiveRecord, Segment

MANIFEST = "manifest.jsonl"


def read_manifest(directory: Path) -> list[Segment]:
    """The segments of a directory archive, oldest first; a torn last line (a crash mid-write) is left out."""
    path = directory / MANIFEST
    if not path.exists():
        return []
    segments = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            segments.append(Segment(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return segments


def move_directory(rec: ArchiveRecord, write: Callable[[Segment, bytes], None]) -> int:
    """Copy the directory archive ``rec`` names through ``write`` (a segment and its bytes), each
    segment linked to the one before; how many segments.  :class:`ArchiveError` when the directory
    cannot be read here or does not hold the record's events."""
    directory = Path(rec.location)
    if not directory.is_dir():
        raise ArchiveError(
            f"events up to {rec.last_id} are archived in {directory}, which is not on this machine:"
            " run the scheduler once where it is, to move them into the blob store"
        )
    previous, moved = "", 0
    for seg in read_manifest(directory):
        if previous and id_key(seg.first) <= id_key(previous):
            raise ArchiveError(f"{directory / MANIFEST}: segment {seg.file} overlaps the one before")
        try:
            data = (directory / seg.file).read_bytes()
        except FileNotFoundError:
            raise ArchiveError(f"archive segment {directory / seg.file} is missing") from None
        if hashlib.sha256(data).hexdigest() != seg.sha256:
            raise ArchiveError(f"archive segment {directory / seg.file} is not what its manifest says")
        write(Segment(**{**seg.__dict__, "after": previous}), data)
        previous, moved = seg.last, moved + 1
        if id_key(previous) >= id_key(rec.last_id):
            break
    if previous != rec.last_id:
        raise ArchiveError(f"the archive in {directory} ends at {previous or 'nothing'}, not {rec.last_id}")
    return moved
