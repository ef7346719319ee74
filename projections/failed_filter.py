"""The failed and timed-out jobs that match a filter (queue, the kind of the latest error, when the
job reached its status), newest first: what the dashboard's failed page shows once it is filtered.

Neither the error kind nor the end time is indexed, so the jobs are found by a bounded walk: the
failed and timed-out sets of the queues concerned are read newest first, :data:`CHUNK` ids of each
at a time, and each id's fields are read and checked.  The walk stops once the page is full and no
unread id could still come before its last job, once every set is read through, or once
:data:`BUDGET` ids have been looked at (then the page says it may be missing jobs).  So its cost
follows how deep the page is and how rare the matches are, never the ledger's size.  The criteria
and their meaning are those of a bulk operation's filter, so a page's filter can be acted on whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jobledger.ledger.keys import Keys
from jobledger.ledger.reads import Read
from jobledger.projections.listing import SUMMARY
from jobledger.projections.views import job_view

#: The fields a failed job's row shows: its summary and its errors.
FAILED_FIELDS = (*SUMMARY, "errors")
#: How many ids of each set one step reads.
CHUNK = 200
#: The most ids one walk looks at.
BUDGET = 20_000
ENDED_BADLY = ("failed", "timed_out")


@dataclass(frozen=True)
class FailedFilter:
    """Which failed and timed-out jobs to show: every criterion given must hold.  ``since`` and
    ``until`` (ms) bound the time the job reached its status (its ``ended_at``), ``until`` excluded."""

    queue: str | None = None
    error_kind: str | None = None
    since: int | None = None
    until: int | None = None

    def given(self) -> bool:
        return any(v is not None for v in (self.queue, self.error_kind, self.since, self.until))

    def matches(self, h: dict[str, str]) -> bool:
        """Whether the job's stored fields (``ended_at`` and ``errors`` as held) pass the filter."""
        if self.error_kind is not None:
            errors = json.loads(h.get("errors") or "[]")
            if not errors or errors[-1].get("kind") != self.error_kind:
                return False
        at = int(h.get("ended_at") or h.get("started_at") or h.get("created_at") or 0)
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)


@dataclass(frozen=True)
class Found:
    """The matching jobs, newest first (at most the count asked for), how many ids were looked at,
    and whether the walk stopped at its budget before it could be sure of them."""

    jobs: list[dict[str, Any]]
    looked: int
    capped: bool


@dataclass
class _Walk:
    """Where a walk is: each set's next offset, whether it is read through, the last id it gave."""

    sets: list[tuple[str, str]]
    flt: FailedFilter
    count: int
    offsets: list[int] = field(default_factory=list)
    done: list[bool] = field(default_factory=list)
    last: list[int] = field(default_factory=list)
    matched: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    looked: int = 0

    def __post_init__(self) -> None:
        n = len(self.sets)
        self.offsets, self.done, self.last = [0] * n, [False] * n, [0] * n

    def open_sets(self) -> list[int]:
        return [i for i, d in enumerate(self.done) if not d]

    def settled(self) -> list[tuple[int, dict[str, Any]]]:
        """The matches no unread id can come before: newer than every open set's last id."""
        frontier = max((self.last[i] for i in self.open_sets()), default=0)
        return sorted((m for m in self.matched if m[0] > frontier), key=lambda m: m[0], reverse=True)

    def result(self) -> Found | None:
        """The answer, once the walk can stop; None while it must go on."""
        settled = self.settled()
        if len(settled) >= self.count or not self.open_sets():
            return Found([job for _, job in settled[: self.count]], self.looked, False)
        if self.looked >= BUDGET:
            everything = sorted(self.matched, key=lambda m: m[0], reverse=True)
            return Found([job for _, job in everything[: self.count]], self.looked, True)
        return None


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _step(walk: _Walk) -> Read[Found]:
    """Read the next chunk of every open set, then those jobs' fields, then go on or answer."""
    reading = walk.open_sets()

    def ranges(k: Keys) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for i in reading:
            queue, status = walk.sets[i]
            start = walk.offsets[i]
            out.append(("ZRANGE", k.queue_status(queue, status), start, start + CHUNK - 1, "REV"))
        return out

    def listed(r: list[Any]) -> Read[Found] | Found:
        ids: list[int] = []
        for i, reply in zip(reading, r, strict=True):
            got = [int(_s(m)) for m in reply]
            walk.offsets[i] += len(got)
            walk.done[i] = len(got) < CHUNK
            if got:
                walk.last[i] = got[-1]
            ids += got
        walk.looked += len(ids)
        return _checked(walk, ids)

    return Read(ranges, listed)


def _checked(walk: _Walk, ids: list[int]) -> Read[Found] | Found:
    def fields(k: Keys) -> list[tuple[Any, ...]]:
        return [("HMGET", k.job(i), *FAILED_FIELDS) for i in ids]

    def parse(r: list[Any]) -> Read[Found] | Found:
        for i, values in zip(ids, r, strict=True):
            held = {name: _s(v) for name, v in zip(FAILED_FIELDS, values, strict=True) if v is not None}
            if held and walk.flt.matches(held):
                walk.matched.append((i, job_view(i, held, FAILED_FIELDS)))
        done = walk.result()
        return done if done is not None else _step(walk)

    if not ids:
        done = walk.result()
        return done if done is not None else _step(walk)
    return Read(fields, parse)


def failed_matching(queues: list[str], flt: FailedFilter, count: int) -> Read[Found]:
    """The newest ``count`` failed or timed-out jobs of ``queues`` (all of one partition, at least
    one) that ``flt`` matches, each with :data:`FAILED_FIELDS`."""
    return _step(_Walk([(q, s) for q in sorted(queues) for s in ENDED_BADLY], flt, count))


def newest_of(parts: list[Found], count: int) -> Found:
    """Several partitions' answers as one: newest first by when each job was made (ids of different
    partitions do not follow one another)."""
    jobs = sorted(
        (j for p in parts for j in p.jobs), key=lambda j: (j["created_at"] or "", j["id"]), reverse=True
    )
    return Found(jobs[:count], sum(p.looked for p in parts), any(p.capped for p in parts))
