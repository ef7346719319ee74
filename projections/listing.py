"""Job listing: ``GET /queue/{q}/jobs?status=&tag=&limit=&cursor=`` as pages of job summaries.

Pages are in id order; ``cursor`` is the last id of the previous page (exclusive) and ``next`` is
None on the last page.  With a status other than queued, a page reads only its slice of that
status's set.  Queued jobs (the plain set and every quota lane) and tag sets have their ids read
whole and sliced here (their order is not the id order, so that read costs in proportion to their
size); whatever the status, a page reads the fields of at most ``limit + 1`` jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobledger.ledger.errors import NotFound
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import queue_route
from jobledger.ledger.reads import Read
from jobledger.ledger.requests import JOB_STATUSES
from jobledger.projections.views import decode_hash, job_view

SUMMARY = ("id", "queue", "status", "priority", "tags", "quota_key", "created_at", "started_at",
           "ended_at", "attempt", "worker", "progress", "message", "ended")  # fmt: skip


def _ids(reply: Any) -> list[int]:
    return [int(m[0] if isinstance(m, (list, tuple)) else m) for m in reply]


Plan = list[tuple[str, Callable[[Keys], tuple[Any, ...]]]]


def _plan(queue: str, status: str | None, tag: str | None, cursor: int, limit: int) -> Plan:
    """What to read for the ids a page can come from: ("ids", command) or ("lanes", command)."""
    if tag is not None:
        return [("ids", lambda k: ("SMEMBERS", k.tag(tag)))]
    plan: Plan = []
    for s in [status] if status else JOB_STATUSES:
        if s == "queued":
            plan.append(("ids", lambda k: ("ZRANGE", k.queued_ids(queue), 0, -1)))
            plan.append(("lanes", lambda k: ("SMEMBERS", k.build("queue_lanes", name=queue))))
        else:
            plan.append(
                (
                    "ids",
                    lambda k, s=s: (  # type: ignore[misc]
                        "ZRANGE",
                        k.queue_status(queue, s),
                        f"({cursor}",
                        "+inf",
                        "BYSCORE",
                        "LIMIT",
                        0,
                        limit + 1,
                    ),
                )
            )
    return plan


def page(
    queue: str, status: str | None, tag: str | None, limit: int, cursor: int = 0
) -> Read[dict[str, Any]]:
    """One page of the queue's jobs, optionally of one status and/or one tag."""

    plan = _plan(queue, status, tag, cursor, limit)

    def first(r: list[Any]) -> Read[dict[str, Any]]:
        if not r[0]:
            raise NotFound(f"queue '{queue}' does not exist")
        ids: set[int] = set()
        lanes: list[str] = []
        for (kind, _), reply in zip(plan, r[1:], strict=True):
            if kind == "lanes":
                lanes = [m.decode() if isinstance(m, bytes) else str(m) for m in reply]
            else:
                ids |= set(_ids(reply))
        return _with_lanes(lanes, ids)

    def _with_lanes(lanes: list[str], ids: set[int]) -> Read[dict[str, Any]]:
        def parse(r: list[Any]) -> Read[dict[str, Any]]:
            found = sorted(i for i in ids | {i for reply in r for i in _ids(reply)} if i > cursor)
            return _summaries(found[: limit + 1], len(found) > limit + 1)

        return Read(
            lambda k: [("ZRANGE", k.build("queue_lane", name=queue, key=key), 0, -1) for key in lanes], parse
        )

    def _summaries(ids: list[int], beyond: bool) -> Read[dict[str, Any]]:
        """The jobs of ``ids`` (the lowest ``limit + 1`` the page can hold; ``beyond``: there are
        more after them).  A job that left the queue or its status since its id was read is left
        out, so a page may hold fewer than ``limit`` jobs with a ``next``."""

        def parse(r: list[Any]) -> dict[str, Any]:
            jobs = []
            for job_id, raw in zip(ids, r, strict=True):
                h = decode_hash(raw)
                if h and h.get("queue") == queue and (status is None or h.get("status") == status):
                    jobs.append(job_view(job_id, h, SUMMARY))
            more = len(jobs) > limit or (beyond and bool(ids))
            jobs = jobs[:limit]
            last = jobs[-1]["id"] if jobs else (ids[-1] if ids else None)
            return {"jobs": jobs, "next": last if more else None}

        return Read(lambda k: [("HGETALL", k.job(i)) for i in ids], parse)

    return Read(
        lambda k: [("EXISTS", k.queue(queue)), *(build(k) for _, build in plan)], first, queue_route(queue)
    )
