"""The dashboard's failed page: failed and timed-out jobs of every queue, newest first, each with its
latest error's kind, message and attempt and the time it ended, filtered by queue, error kind and
time range.  Unfiltered, a page reads a rank range of each queue's failed and timed-out sets (on a
split ledger: every partition's, merged); filtered, a bounded walk of the queues concerned
(:mod:`jobledger.projections.failed_filter`), in each partition at once, merged."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from jobledger.ledger.durations import parse_time
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.keys import valid_queue_name
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.requests import MAX_ERROR_KIND
from jobledger.projections import job_pages, readers
from jobledger.projections.failed_filter import BUDGET, FailedFilter, Found, failed_matching, newest_of
from jobledger.server.auth import READ
from jobledger.server.inputs import positive_int
from jobledger.server.ui.render import answered, page
from jobledger.server.ui.session import admit

PAGE_SIZE = 50
MAX_PAGE = 1000
#: The fields of the page's filter, as its query and the forms acting on it carry them.
FILTER_FIELDS = ("queue", "error_kind", "since", "until")
#: A time of the form a browser's datetime-local field sends: to the minute (or second), no zone.
_LOCAL_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$")


@dataclass(frozen=True)
class Shown:
    """What the page shows: its jobs, whether there is a next page, and for a filtered page how many
    jobs were looked at and whether the walk stopped at its budget."""

    jobs: list[dict[str, object]]
    more: bool
    looked: int | None = None
    capped: bool = False


def _time(values: Mapping[str, str], name: str) -> int | None:
    """``since`` / ``until``: RFC 3339, or a datetime-local value taken as UTC; blank is none."""
    raw = (values.get(name) or "").strip()
    if not raw:
        return None
    try:
        return parse_time(raw + ":00Z" if _LOCAL_TIME.match(raw) and raw.count(":") == 1 else raw)
    except ValueError:
        raise BadRequest(f"{name} must be a time such as 2026-05-01T14:00 (UTC), not {raw[:40]!r}") from None


def failed_filter(q: Mapping[str, str]) -> FailedFilter:
    """The page's filter from its query, or a form carrying it (400 when a value is bad); a blank
    field is no filter."""
    queue, kind = q.get("queue") or None, (q.get("error_kind") or "").strip() or None
    if queue is not None and not valid_queue_name(queue):
        raise BadRequest(f"invalid queue name {queue[:300]!r}")
    if kind is not None and len(kind) > MAX_ERROR_KIND:
        raise BadRequest(f"error_kind must be at most {MAX_ERROR_KIND} characters")
    since, until = _time(q, "since"), _time(q, "until")
    if since is not None and until is not None and since >= until:
        raise BadRequest("since must come before until")
    return FailedFilter(queue, kind, since, until)


async def _unfiltered(router: AsyncPartitioned, number: int) -> Shown:
    if router.partitioning.count == 1:
        found = await router.read(job_pages.failed_jobs(number, PAGE_SIZE))
        return Shown(found.jobs, found.more)
    merge = await router.read(job_pages.failed_merge(number, PAGE_SIZE))
    while wanted := merge.wanted():
        times = await asyncio.gather(*(router.read(job_pages.created_at(ids)) for _, ids in wanted))
        merge = merge.timed([(p, t) for (p, _), t in zip(wanted, times, strict=True)])
    window = merge.window()
    found = window.page(list(await asyncio.gather(*(router.read(r) for r in window.reads()))))
    return Shown(found.jobs, found.more)


async def _filtered(router: AsyncPartitioned, flt: FailedFilter, number: int) -> Shown:
    """The filtered page: each partition's newest matches up to the page's end, merged."""
    names = [flt.queue] if flt.queue else await router.read(readers.queue_names())
    groups: dict[int, list[str]] = {}
    for name, partition in (await router.locate(names)).items():
        groups.setdefault(partition, []).append(name)
    if not groups:
        return Shown([], False, 0)
    count = number * PAGE_SIZE + 1
    parts: list[Found] = await asyncio.gather(
        *(router.runners[p].read(failed_matching(group, flt, count)) for p, group in groups.items())
    )
    found = parts[0] if len(parts) == 1 else newest_of(parts, count)
    offset = (number - 1) * PAGE_SIZE
    return Shown(found.jobs[offset : offset + PAGE_SIZE], len(found.jobs) > offset + PAGE_SIZE,
                 found.looked, found.capped)  # fmt: skip


@answered
async def failed(request: Request) -> Response:
    """Failed and timed-out jobs, newest first, filtered, with the actions each allows."""
    request.state.viewer = await admit(request, READ)
    flt = failed_filter(request.query_params)
    number = positive_int(request, "page", 1, MAX_PAGE)
    ledger: OpeningLedger = request.state.ledger
    router = await ledger.opened()
    shown = await (_filtered(router, flt, number) if flt.given() else _unfiltered(router, number))
    query = {k: v for k in FILTER_FIELDS if (v := request.query_params.get(k))}
    queues = await router.read(readers.queue_names())
    return page(
        request, "failed.html", jobs=shown.jobs, more=shown.more, number=number, query=query,
        looked=shown.looked, capped=shown.capped, budget=BUDGET, queues=queues, filter=flt,
        bulk_route="/ui/bulk",
    )  # fmt: skip
