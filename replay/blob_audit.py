"""``replay verify --blobs``: every blob the projections refer to is in the store and hashes to its name.

What is checked: the files and results in the records of the jobs still in the projections, the
references the ``blobs`` projection counts and the collector keeps.  Not the blobs the events of
expired or deleted jobs, or results replaced under the same name, once named: the collector may
have swept those by design, so their absence is no fault.  Each blob is streamed from the store and
hashed (never held whole in memory); its size must be the one recorded too.  A problem names the
jobs that refer to the blob, and how (a file or a result, and its name).

Cost: a SCAN of the job records, then one read of every referenced blob, each once however many
jobs name it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import redis

from jobledger.blobs.store import BlobMissing, BlobStore, Hashing
from jobledger.ledger.runner import live_keys

SCAN_COUNT = 500


@dataclass
class Referenced:
    """A blob the projections name: the size recorded, and where (``job 7 file run.sh``)."""

    size: int
    by: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BlobProblem:
    """A referenced blob that the store lacks, or whose bytes are not what the ledger says."""

    sha256: str
    problem: str
    by: tuple[str, ...]

    def __str__(self) -> str:
        return f"blob {self.sha256}: {self.problem}; referred to by {', '.join(self.by)}"


@dataclass
class BlobAudit:
    """What ``--blobs`` found: how many blobs (and bytes) it read, and each problem."""

    checked: int = 0
    bytes: int = 0
    problems: list[BlobProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _job_records(client: redis.Redis, namespace: str) -> Iterator[tuple[str, str | None, str | None]]:
    """(job id, its files JSON, its results JSON) of every job record of the live projections: a SCAN,
    and one pipelined read of each batch of records it finds."""
    keys = live_keys(client, namespace)
    prefix = keys.job("")
    cursor: int | None = None
    while cursor != 0:
        match = keys.pattern().removesuffix("*") + "job:*"
        cursor, found = client.scan(cursor or 0, match=match, count=SCAN_COUNT)  # type: ignore[misc]
        ids = [_s(key).removeprefix(prefix) for key in found]
        ids = [i for i in ids if i.isdigit()]
        pipe = client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hmget(keys.job(job_id), ["files", "results"])
        for job_id, (files, results) in zip(ids, pipe.execute(), strict=True):
            yield job_id, None if files is None else _s(files), None if results is None else _s(results)


def referenced(client: redis.Redis, namespace: str) -> dict[str, Referenced]:
    """SHA-256 -> the blob's recorded size and the jobs that refer to it, from the job records."""
    found: dict[str, Referenced] = {}
    for job_id, files, results in _job_records(client, namespace):
        for kind, raw in (("file", files), ("result", results)):
            for ref in json.loads(raw) if raw else []:
                entry = found.setdefault(ref["sha256"], Referenced(int(ref["size"])))
                entry.by.append(f"job {job_id} {kind} {ref['name']}")
    for entry in found.values():  # the jobs in id order, whatever order SCAN found them in
        entry.by.sort(key=lambda where: int(where.split()[1]))
    return found


async def check_blob(store: BlobStore, sha256: str, size: int) -> str | None:
    """What is wrong with the stored blob ``sha256`` of ``size`` bytes; None when nothing is."""
    hashing = Hashing()
    try:
        async for chunk in store.read(sha256):
            hashing.update(chunk)
    except BlobMissing:
        return "missing from the store"
    if hashing.hexdigest() != sha256:
        return f"corrupt: its bytes hash to {hashing.hexdigest()}"
    if hashing.size != size:
        return f"{hashing.size} bytes stored, {size} recorded"
    return None


async def audit_blobs(client: redis.Redis, namespace: str, store: BlobStore) -> BlobAudit:
    """Read and hash every blob the live projections refer to (see the module)."""
    audit = BlobAudit()
    for sha256, ref in sorted(referenced(client, namespace).items()):
        problem = await check_blob(store, sha256, ref.size)
        audit.checked += 1
        if problem is None:
            audit.bytes += ref.size
        else:
            audit.problems.append(BlobProblem(sha256, problem, tuple(ref.by)))
    return audit
