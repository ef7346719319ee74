"""Search a queue's jobs for a text: in the id, a tag, the input, the output or the errors, within a
window of creation time.  A bounded scan: ``GET /queue/{q}/jobs?search=``.

Jobs are looked at in id order from the cursor on, as the listing pages them: at most
:data:`SCAN_BUDGET` ids of each status set (the queue's per-status sets are scored by id, so that is
one range each) and then the :data:`SCAN_BUDGET` lowest of those, whose hashes are read and matched
here.  A page therefore reads at most ``SCAN_BUDGET`` jobs, however big the queue; ``next`` is the
last id it looked at when it stopped early (the page full, or the budget spent), so a search over a
big queue goes on page by page, and a page may hold fewer jobs than asked, even none, with a
``next``.  Queued jobs are in hand-out order, not id order: their set is read whole (as the
listing does).
"""

from __future__ import annotations

from typing import Any

from jobledger.ledger.errors import BadRequest, NotFound
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import queue_route
from jobledger.ledger.reads import Read
from jobledger.ledger.requests import JOB_STATUSES
from jobledger.projections.listing import SUMMARY
from jobledger.projections.views import decode_hash, job_view

#: The most jobs one search page reads.
SCAN_BUDGET = 2_000
#: The longest text searched for.
MAX_SEARCH = 255
#: Where the text is looked for, besides the id.
SEARCHED = ("tags", "input", "output", "errors")


def _ids(reply: Any) -> list[int]:
    return [int(m) for m in reply]


def _matches(job_id: int, h: dict[str, str], text: str, since: int | None, until: int | None) -> bool:
    created = int(h.get("created_at", 0))
    if (since is not None and created < since) or (until is not None and created >= until):
        return False
    return text == str(job_id) or any(text in h.get(name, "") for name in SEARCHED)


def checked_text(text: str, tag: str | None) -> str:
    """``text`` as a search's (the API's ``?search=``, the queue page's): BadRequest unless it is 1
    to :data:`MAX_SEARCH` characters and comes without a tag filter (a tag is searched as text)."""
    if not 1 <= len(text) <= MAX_SEARCH:
        raise BadRequest(f"search must be 1 to {MAX_SEARCH} characters")
    if tag is not None:
        raise BadRequest("search and tag do not go together: a tag is searched as text")
    return text


def search(
    queue: str,
    text: str,
    status: str | None,
    limit: int,
    cursor: int = 0,
    since: int | None = None,
    until: int | None = None,
) -> Read[dict[str, Any]]:
    """One page of the queue's jobs (of one status, if given) that hold ``text``."""
    wanted = [status] if status else list(JOB_STATUSES)

    def commands(k: Keys) -> list[tuple[Any, ...]]:
        reads: list[tuple[Any, ...]] = [("EXISTS", k.queue(queue))]
        for s in wanted:
            if s == "queued":
                reads.append(("ZRANGE", k.queued_ids(queue), 0, -1))
                reads.append(("SMEMBERS", k.build("queue_lanes", name=queue)))
            else:
                reads.append(("ZRANGE", k.queue_status(queue, s), f"({cursor}", "+inf", "BYSCORE",
                              "LIMIT", 0, SCAN_BUDGET + 1))  # fmt: skip
        return reads

    def first(r: list[Any]) -> Read[dict[str, Any]]:
        if not r[0]:
            raise NotFound(f"queue '{queue}' does not exist")
        ids: set[int] = set()
        lanes: list[str] = []
        at = 1
        for s in wanted:
            ids |= {i for i in _ids(r[at]) if i > cursor}
            if s == "queued":
                lanes = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in r[at + 1])
                at += 1
            at += 1
        return _with_lanes(ids, lanes)

    def _with_lanes(ids: set[int], lanes: list[str]) -> Read[dict[str, Any]]:
        def parse(r: list[Any]) -> Read[dict[str, Any]]:
            found = ids | {i for reply in r for i in _ids(reply) if i > cursor}
            ordered = sorted(found)
            return _scan(ordered[:SCAN_BUDGET], len(ordered) > SCAN_BUDGET)

        return Read(
            lambda k: [("ZRANGE", k.build("queue_lane", name=queue, key=lane), 0, -1) for lane in lanes],
            parse,
        )

    def _scan(ids: list[int], more: bool) -> Read[dict[str, Any]]:
        def parse(r: list[Any]) -> dict[str, Any]:
            jobs: list[dict[str, Any]] = []
            last = cursor
            for job_id, raw in zip(ids, r, strict=True):
                h = decode_hash(raw)
                if len(jobs) == limit:
                    return {"jobs": jobs, "next": last}
                last = job_id
                mine = h and h.get("queue") == queue and (status is None or h.get("status") == status)
                if mine and _matches(job_id, h, text, since, until):
                    jobs.append(job_view(job_id, h, SUMMARY))
            return {"jobs": jobs, "next": last if more else None}

        return Read(lambda k: [("HGETALL", k.job(i)) for i in ids], parse)

    return Read(commands, first, queue_route(queue))
