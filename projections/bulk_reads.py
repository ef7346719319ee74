"""What a bulk operation reads: where the jobs it may act on are, a page of them at a time, and the
operation's record.

Without ids, an operation looks at the status sets of each queue it concerns (the filter's queue,
or every queue of the partition), of each status its action takes (or the filter's status): the
sorted sets of a queue's jobs by status (scored by id), and for queued jobs the plain set and each
quota lane (scored by hand-out order).  Each set is walked by score, a page at a time, from below
up to the highest score it held when the walk began: jobs leaving the set as the operation acts on
them do not move the walk, and jobs arriving later are not chased.  The script that acts on a page
checks every job against the whole filter, so a page may hold jobs that do not match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import partition_route, spread
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import score_pairs
from jobledger.ledger.requests import JOB_STATUSES

#: The statuses a job may have for each action to take it (as its single PATCH or DELETE).
ACTION_STATUSES: dict[str, tuple[str, ...]] = {
    "requeue": ("cancelled", "failed", "timed_out"),
    "cancel": ("running", "queued", "scheduled", "failed", "timed_out"),
    "delete": JOB_STATUSES,
}


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def statuses(action: str, named: tuple[str, ...] | None) -> tuple[str, ...]:
    """The statuses whose sets an operation walks: those the filter names that the action takes
    (none named: all the action takes)."""
    taken = ACTION_STATUSES[action]
    if named is None:
        return taken
    return tuple(s for s in named if s in taken)


@dataclass(frozen=True)
class Source:
    """One sorted set of a queue's jobs: those of ``status`` (a quota ``lane`` of its queued ones)."""

    queue: str
    status: str
    lane: str | None = None

    def key(self, k: Keys) -> str:
        if self.lane is not None:
            return k.build("queue_lane", name=self.queue, key=self.lane)
        return (
            k.queued_ids(self.queue) if self.status == "queued" else k.queue_status(self.queue, self.status)
        )


def queues(partition: int) -> Read[list[str]]:
    """The queues of ``partition``, by name."""
    return Read(
        lambda k: [("SMEMBERS", k.build("queues"))],
        lambda r: sorted(_s(n) for n in r[0]),
        partition_route(partition),
    )


def sources(partition: int, queue: str, wanted: tuple[str, ...]) -> Read[list[Source]]:
    """The sets of ``queue`` (in ``partition``) holding its jobs of the ``wanted`` statuses that
    are not empty, quota lanes included."""

    def commands(k: Keys) -> list[tuple[Any, ...]]:
        plain = [("ZCARD", Source(queue, s).key(k)) for s in wanted]
        return [*plain, ("SMEMBERS", k.build("queue_lanes", name=queue))]

    def parse(r: list[Any]) -> list[Source]:
        found = [Source(queue, s) for s, n in zip(wanted, r, strict=False) if int(n)]
        if "queued" in wanted:
            found += [Source(queue, "queued", _s(lane)) for lane in sorted(r[-1], key=_s)]
        return found

    return Read(commands, parse, partition_route(partition))


def top(partition: int, source: Source) -> Read[float | None]:
    """The highest score of the set (None: empty): where its walk ends."""

    def parse(r: list[Any]) -> float | None:
        pairs = score_pairs(r[0])
        return pairs[0][1] if pairs else None

    return Read(
        lambda k: [("ZRANGE", source.key(k), -1, -1, "WITHSCORES")], parse, partition_route(partition)
    )


def page(
    partition: int, source: Source, after: float | None, upto: float, count: int
) -> Read[tuple[list[int], float | None]]:
    """Up to ``count`` ids of the set scored above ``after`` (None: from the start) and at most
    ``upto``, and the last one's score (None: none left)."""
    low = "-inf" if after is None else f"({int(after)}"

    def parse(r: list[Any]) -> tuple[list[int], float | None]:
        pairs = score_pairs(r[0])
        return [int(_s(m)) for m, _ in pairs], (pairs[-1][1] if pairs else None)

    return Read(
        lambda k: [("ZRANGE", source.key(k), low, int(upto), "BYSCORE", "LIMIT", 0, count, "WITHSCORES")],
        parse,
        partition_route(partition),
    )


def _merged(parts: list[dict[str, str] | None]) -> dict[str, str] | None:
    """The home partition's record, with the jobs done counted over every partition."""
    home = parts[0]
    if home is None:
        return None
    done = sum(int(p.get("done", 0)) for p in parts if p)
    return {**home, "done": str(done)}


def record(operation: str) -> Read[dict[str, str] | None]:
    """An operation's record: ``action``, ``spec`` (its ``bulk_started`` data), ``queue``,
    ``started_at``, and once it went through ``finished_at`` and ``matched``; ``done`` counts its
    jobs' events in every partition.  None: no such operation."""

    def parse(r: list[Any]) -> dict[str, str] | None:
        found = {_s(k): _s(v) for k, v in r[0].items()}
        return found if found else None

    def merge(parts: list[Any]) -> dict[str, str] | None:
        return _merged(parts)

    return Read(lambda k: [("HGETALL", k.build("bulk", operation=operation))], parse, spread(merge))
