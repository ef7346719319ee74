"""Bounded pages of jobs for the dashboard: a queue's jobs (by status, by tag, or all), and the failed
and timed-out jobs of every queue, each page numbered from 1.

A page at offset ``o`` of size ``n`` reads at most ``o + n + 1`` ids from each set it draws on
(a rank range of the sorted set, never the whole set) and then only the page's own job hashes, so
its cost does not grow with the number of jobs in the ledger.  The per-status sets are scored by
id, so their ranges come newest first.  Queued jobs come in the order they will be handed out
(the plain set and every quota lane merged by score); in the all-statuses view they are taken
from the end of that order, so that view is newest first exactly when the queued jobs share one
priority.  A tag set has no order.  A small tag (up to :data:`SMALL_TAG` ids) is read whole, newest
first, and just enough of its jobs are checked for queue and status; a bigger one is not read: the
queue's status sets are walked newest first, a chunk at a time checked against the tag
(``SMISMEMBER``), until the page is full or :data:`WALK_BUDGET` ids of a set have been looked at.
Either way the cost follows the page and the tag's density, not the ledger's size.

A queue lives in one partition of a split ledger, so its pages read there.  The failed jobs of every
queue come from every partition: each reads its newest ``o + n + 1`` ids, which are merged newest
first by ``created_at``, read only as far as the merge needs (:class:`Merge`), and only the page's
own job hashes are read, in their partitions (:func:`summaries`).  Within a partition ids follow
creation, so its newest ids are its newest jobs, and the page is the same jobs in the same order as
on one ledger.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Route, queue_route, spread
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import score_pairs
from jobledger.ledger.requests import JOB_STATUSES
from jobledger.projections.failed_filter import ENDED_BADLY, FAILED_FIELDS
from jobledger.projections.listing import SUMMARY
from jobledger.projections.views import decode_hash, job_view

#: How many jobs' queue and status a tag page checks per round trip.
TAG_CHUNK = 500
#: A tag with more ids than this is not read whole: the status sets are walked instead, a chunk of
#: ids at a time checked against the tag, at most WALK_BUDGET ids of each.
SMALL_TAG = 5_000
WALK_CHUNK = 1_000
WALK_BUDGET = 20_000


@dataclass(frozen=True)
class JobPage:
    """One page of job summaries, and whether there is a page after it."""

    jobs: list[dict[str, Any]]
    more: bool


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _newest(replies: list[Any]) -> list[int]:
    """Ids of several id-scored windows merged newest first, each id once."""
    ids = {int(_s(i)) for reply in replies for i in reply}
    return sorted(ids, reverse=True)


def _summaries(ids: list[int], limit: int, fields: tuple[str, ...] = SUMMARY) -> Read[JobPage]:
    """The page of ``ids`` (one more than ``limit`` tells that there is a next page), as summaries
    (of ``fields``)."""

    def parse(r: list[Any]) -> JobPage:
        jobs = [job_view(i, h, fields) for i, raw in zip(ids, r, strict=True) if (h := decode_hash(raw))]
        return JobPage(jobs[:limit], len(ids) > limit)

    return Read(lambda k: [("HGETALL", k.job(i)) for i in ids], parse)


def _window(k: Keys, queue: str, status: str, count: int) -> tuple[Any, ...]:
    """The newest ``count`` ids of one status set (the queued ones: the last ``count`` handed out)."""
    key = k.queued_ids(queue) if status == "queued" else k.queue_status(queue, status)
    return ("ZRANGE", key, 0, count - 1, "REV")


def _queued_in_order(queue: str, offset: int, limit: int) -> Read[JobPage]:
    """Queued jobs in hand-out order: the plain set merged with every quota lane, by score."""
    count = offset + limit + 1

    def ranges(lanes: list[str]) -> Read[JobPage]:
        def commands(k: Keys) -> list[tuple[Any, ...]]:
            keys = [k.queued_ids(queue), *(k.build("queue_lane", name=queue, key=lane) for lane in lanes)]
            return [("ZRANGE", key, 0, count - 1, "WITHSCORES") for key in keys]

        def parse(r: list[Any]) -> Read[JobPage]:
            merged = heapq.merge(*([(score, int(_s(i))) for i, score in score_pairs(reply)] for reply in r))
            ids = [i for _, i in merged][offset:count]
            return _summaries(ids, limit)

        return Read(commands, parse)

    def plain(r: list[Any]) -> Read[JobPage]:
        """Without quota lanes, one rank range of the queued set is the page."""
        return (
            _summaries([int(_s(i)) for i in r[1]], limit) if not r[0] else ranges(sorted(_s(x) for x in r[0]))
        )

    return Read(
        lambda k: [("SMEMBERS", k.build("queue_lanes", name=queue)),
                   ("ZRANGE", k.queued_ids(queue), offset, count - 1)],
        plain,
    )  # fmt: skip


def _all_statuses(queue: str, offset: int, limit: int) -> Read[JobPage]:
    count = offset + limit + 1

    def lanes_too(lanes: list[str]) -> Read[JobPage]:
        def commands(k: Keys) -> list[tuple[Any, ...]]:
            out = [_window(k, queue, s, count) for s in JOB_STATUSES]
            lane_keys = [k.build("queue_lane", name=queue, key=lane) for lane in lanes]
            return out + [("ZRANGE", key, 0, count - 1, "REV") for key in lane_keys]

        return Read(commands, lambda r: _summaries(_newest(r)[offset:count], limit))

    return Read(
        lambda k: [("SMEMBERS", k.build("queue_lanes", name=queue))],
        lambda r: lanes_too(sorted(_s(lane) for lane in r[0])),
    )


def _then(read: Read[Any] | Any, then: Callable[[Any], Any]) -> Any:
    """``read``, its value (after however many round trips it takes) handed to ``then``; a value
    that needs no read is handed over at once."""
    if not isinstance(read, Read):
        return then(read)

    def parse(r: list[Any]) -> Any:
        value = read.parse(r)
        return _then(value, then) if isinstance(value, Read) else then(value)

    return Read(read.commands, parse)


def _small_tag(queue: str, status: str | None, ids: list[int], count: int) -> Read[list[int]] | list[int]:
    """Of a small tag's ids, newest first, the first ``count`` whose job is of the queue (and status)."""

    def check(candidates: list[int], found: list[int]) -> Read[list[int]] | list[int]:
        chunk, rest = candidates[:TAG_CHUNK], candidates[TAG_CHUNK:]

        def parse(r: list[Any]) -> Read[list[int]] | list[int]:
            for i, (q, s) in zip(chunk, r, strict=True):
                if q is not None and _s(q) == queue and (status is None or _s(s) == status):
                    found.append(i)
            return found[:count] if len(found) >= count or not rest else check(rest, found)

        return Read(lambda k: [("HMGET", k.job(i), "queue", "status") for i in chunk], parse)

    return check(sorted(ids, reverse=True), []) if ids else []


def _walk(key: Callable[[Keys], str], newest_first: bool, tag: str, count: int) -> Read[list[int]]:
    """The first ``count`` ids of a sorted set, newest first or in its own order, that carry the tag,
    looking at no more than :data:`WALK_BUDGET` of them: twice ``count`` ids first, then chunks
    twice as large each time, up to :data:`WALK_CHUNK`."""
    order = ("REV",) if newest_first else ()

    def step(start: int, size: int, found: list[int]) -> Read[list[int]]:
        def ranged(r: list[Any]) -> Read[list[int]] | list[int]:
            ids = [int(_s(i)) for i in r[0]]
            if not ids:
                return found

            def checked(r: list[Any]) -> Read[list[int]] | list[int]:
                kept = found + [i for i, member in zip(ids, r[0], strict=True) if int(member)]
                done = len(kept) >= count or len(ids) < size or start + len(ids) >= WALK_BUDGET
                return kept[:count] if done else step(start + len(ids), min(2 * size, WALK_CHUNK), kept)

            return Read(lambda k: [("SMISMEMBER", k.tag(tag), *ids)], checked)

        return Read(lambda k: [("ZRANGE", key(k), start, start + size - 1, *order)], ranged)

    return step(0, min(2 * count, WALK_CHUNK), [])


def _big_tag(queue: str, status: str | None, tag: str, count: int) -> Read[list[int]]:
    """A big tag's ids of the queue: each status set walked newest first, checked against the tag."""
    statuses: list[str] = [status] if status else list(JOB_STATUSES)

    def walk(rest: list[str], found: list[int]) -> Read[list[int]]:
        s = rest[0]
        key: Callable[[Keys], str] = (
            (lambda k: k.queued_ids(queue)) if s == "queued" else (lambda k: k.queue_status(queue, s))
        )
        read = _walk(key, s != "queued", tag, count)  # queued: in hand-out order
        return _then(read, lambda ids: walk(rest[1:], found + ids) if rest[1:] else found + ids)

    return _then(walk(statuses, []), lambda ids: ids if status else sorted(set(ids), reverse=True))


def _tagged(queue: str, status: str | None, tag: str, offset: int, limit: int) -> Read[JobPage]:
    """A page of the queue's jobs carrying the tag (see the module docstring)."""
    count = offset + limit + 1

    def sized(r: list[Any]) -> Read[JobPage]:
        if int(r[0]) > SMALL_TAG:
            found = _big_tag(queue, status, tag, count)
            return _then(found, lambda ids: _summaries(ids[offset:count], limit))
        return Read(
            lambda k: [("SMEMBERS", k.tag(tag))],
            lambda r: _then(
                _small_tag(queue, status, [int(_s(i)) for i in r[0]], count),
                lambda ids: _summaries(ids[offset:count], limit),
            ),
        )

    return Read(lambda k: [("SCARD", k.tag(tag))], sized)


def queue_jobs(queue: str, status: str | None, tag: str | None, page: int, limit: int) -> Read[JobPage]:
    """Page ``page`` (from 1) of the queue's jobs, of one status or all, with one tag or any; read in
    the queue's partition."""
    return replace(_queue_jobs(queue, status, tag, page, limit), route=queue_route(queue))


def _queue_jobs(queue: str, status: str | None, tag: str | None, page: int, limit: int) -> Read[JobPage]:
    offset = (page - 1) * limit
    if tag is not None:
        return _tagged(queue, status, tag, offset, limit)
    if status == "queued":
        return _queued_in_order(queue, offset, limit)
    if status is None:
        return _all_statuses(queue, offset, limit)
    count = offset + limit + 1
    return Read(
        lambda k: [("ZRANGE", k.queue_status(queue, status), offset, count - 1, "REV")],
        lambda r: _summaries([int(_s(i)) for i in r[0]], limit),
    )


def _failed_ids(count: int, then: Callable[[list[int]], Any]) -> Read[Any]:
    """The newest ``count`` ids of the failed and timed-out jobs of every queue (of one partition),
    handed to ``then``."""

    def windows(names: list[str]) -> Read[Any]:
        return Read(
            lambda k: [_window(k, q, s, count) for q in names for s in ENDED_BADLY],
            lambda r: then(_newest(r)[:count]),
        )

    return Read(lambda k: [("SMEMBERS", k.build("queues"))], lambda r: windows(sorted(_s(n) for n in r[0])))


def failed_jobs(page: int, limit: int) -> Read[JobPage]:
    """Page ``page`` (from 1) of the failed and timed-out jobs of every queue, newest first (a ledger
    of one partition; a split one: :func:`failed_merge`)."""
    offset = (page - 1) * limit
    return _failed_ids(offset + limit + 1, lambda ids: _summaries(ids[offset:], limit, FAILED_FIELDS))


@dataclass(frozen=True)
class Window:
    """The ids of one page of jobs drawn from several partitions, in the page's order; ``more``:
    whether there is a page after it.  Their summaries: :meth:`reads`, one per partition, and
    :meth:`page` of what they read."""

    ids: list[int]
    more: bool
    partitions: int

    def reads(self) -> list[Read[JobPage]]:
        """A read of the page's jobs in each partition that holds some."""
        held: dict[int, list[int]] = {}
        for i in self.ids:
            held.setdefault(i % self.partitions, []).append(i)
        return [summaries(ids) for _, ids in sorted(held.items())]

    def page(self, parts: list[JobPage]) -> JobPage:
        """The page, of what :meth:`reads` read (a job gone meanwhile is left out)."""
        found = {job["id"]: job for part in parts for job in part.jobs}
        return JobPage([found[i] for i in self.ids if i in found], self.more)


def summaries(ids: list[int]) -> Read[JobPage]:
    """The summaries of these failed jobs (their errors too), all of one partition, in this order (a
    job gone is left out)."""
    return replace(_summaries(ids, len(ids), FAILED_FIELDS), route=Route(ids=tuple(ids)))


def created_at(ids: list[int]) -> Read[list[int | None]]:
    """When each of these jobs, all of one partition, was made (None: gone)."""

    def parse(r: list[Any]) -> list[int | None]:
        return [None if at is None else int(_s(at)) for at in r]

    return Read(lambda k: [("HGET", k.job(i), "created_at") for i in ids], parse, Route(ids=tuple(ids)))


@dataclass(frozen=True)
class Merge:
    """A page of jobs of several partitions, newest first by ``created_at``, being worked out: each
    partition's candidates (its newest ``offset + limit + 1`` ids, newest first: within a partition
    ids follow creation) and when the first of them were made.  More of those times are read only
    where they can still matter (:meth:`wanted`): a partition whose last timed candidate is no newer
    than the page's end among all the timed ones needs none, its others being older still.  So the
    times read follow the page's depth, not the number of partitions times it."""

    offset: int
    limit: int
    ids: list[list[int]]
    times: list[list[int | None]]

    @property
    def count(self) -> int:
        return self.offset + self.limit + 1

    def _prefix(self, p: int) -> list[tuple[int, int]]:
        """Partition ``p``'s timed candidates as (created_at, id), newest first (gone ones left out)."""
        ids, times = self.ids[p], self.times[p]
        return [(t, i) for i, t in zip(ids[: len(times)], times, strict=True) if t is not None]

    def _timed(self) -> list[tuple[int, int]]:
        """Every timed candidate as (created_at, id), newest first."""
        return sorted((pair for p in range(len(self.ids)) for pair in self._prefix(p)), reverse=True)

    def wanted(self) -> list[tuple[int, list[int]]]:
        """The partitions whose next candidates' times are needed, each with those ids (none: the
        page is known)."""
        timed = self._timed()
        edge = timed[self.count - 1] if len(timed) >= self.count else None
        share = -(-self.count // len(self.ids))
        wanted = []
        for p, (ids, times) in enumerate(zip(self.ids, self.times, strict=True)):
            prefix = self._prefix(p)
            if len(times) == len(ids) or (edge is not None and prefix and prefix[-1] <= edge):
                continue
            wanted.append((p, ids[len(times) : len(times) + max(len(times), share)]))
        return wanted

    def timed(self, found: list[tuple[int, list[int | None]]]) -> Merge:
        """With the times :meth:`wanted` asked for, each with its partition."""
        times = [list(t) for t in self.times]
        for p, more in found:
            times[p] += more
        return replace(self, times=times)

    def window(self) -> Window:
        """The page, once nothing is :meth:`wanted`."""
        newest = [i for _, i in self._timed()][self.offset : self.count]
        return Window(newest[: self.limit], len(newest) > self.limit, len(self.ids))


#: How many of each partition's candidates have their times read at first.
FIRST_TIMES = 16


def failed_merge(page: int, limit: int) -> Read[Merge]:
    """The failed and timed-out jobs of every queue on page ``page`` (from 1) of a split ledger, to
    be worked out (:class:`Merge`): each partition's newest ``offset + limit + 1`` ids, and when the
    first :data:`FIRST_TIMES` of them were made."""
    offset = (page - 1) * limit

    def first(
        ids: list[int],
    ) -> Read[tuple[list[int], list[int | None]]] | tuple[list[int], list[int | None]]:
        head = ids[:FIRST_TIMES]
        return _then(created_at(head), lambda times: (ids, times)) if head else (ids, [])

    def merged(parts: list[tuple[list[int], list[int | None]]]) -> Merge:
        return Merge(offset, limit, [ids for ids, _ in parts], [times for _, times in parts])

    return replace(_failed_ids(offset + limit + 1, first), route=spread(merged))
