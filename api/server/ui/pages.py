"""The dashboard's pages: each reads only what it shows (counters, one page of a set, one job's
history, a bounded tail of the stream), through the projections' readers.  On a ledger split into
partitions a queue's page reads its partition, a job's page its job's, the queues page each queue
in its partition, and the failed jobs every partition, merged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from jobledger.ledger.clock import now_ms
from jobledger.ledger.durations import parse_time
from jobledger.ledger.errors import BadRequest, NotFound
from jobledger.ledger.events import EVENT_TYPES, Event
from jobledger.ledger.files import FileRef
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.reads import Read
from jobledger.ledger.requests import JOB_STATUSES, QueueSettings
from jobledger.ledger.stream import EventFilter, Extent, extent, id_key, recent
from jobledger.ledger.stream_merge import Cursor, concerned, newest_first
from jobledger.projections import job_pages, job_search, readers, throughput
from jobledger.projections.archive import ArchiveRecord, record
from jobledger.projections.history import job_history
from jobledger.projections.launchers import launchers as all_launchers
from jobledger.projections.queue_totals import queue_totals
from jobledger.server.auth import ADMIN, READ, READ_JOB, READ_QUEUE
from jobledger.server.blob_responses import blob_response
from jobledger.server.event_handlers import event_filter, live_end
from jobledger.server.inputs import checked_tag, job_id, positive_int, queue_name, valid_job_id
from jobledger.server.sealed_ledger import Published, ServedLogs, job_seal, published, seal_states
from jobledger.server.sealed_ledger import job_receipt as job_receipt_of
from jobledger.server.ui.charts import throughput_chart
from jobledger.server.ui.render import answered, error_page, page
from jobledger.server.ui.session import admit, auth_on, safe_next, token_of

PAGE_SIZE = 50
MAX_PAGE = 1000  # 50,000 jobs deep; deeper, narrow the filter or search by id
RECENT_EVENTS = 100
#: How often the queues page fetches its table again.
LIVE_SECONDS = 2
T = TypeVar("T")


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


def _status(request: Request) -> str | None:
    status = request.query_params.get("status") or None
    if status is not None and status not in JOB_STATUSES:
        raise BadRequest(f"unknown status {status!r}; known: {', '.join(JOB_STATUSES)}")
    return status


def _tag(request: Request) -> str | None:
    tag = request.query_params.get("tag") or None
    return checked_tag(tag) if tag is not None else None


async def _by_partition(
    router: AsyncPartitioned, names: list[str], read: Callable[[list[str]], Read[dict[str, T]]]
) -> dict[str, T]:
    """``read`` of the queues ``names``, each group of them in its partition, at once, as one answer."""
    groups: dict[int, list[str]] = {}
    for name, partition in (await router.locate(names)).items():
        groups.setdefault(partition, []).append(name)
    parts = await asyncio.gather(*(router.runners[p].read(read(group)) for p, group in groups.items()))
    return {name: value for part in parts for name, value in part.items()}


async def _queue_rows(request: Request) -> list[dict[str, Any]]:
    """Every queue's counts per status, settings, last hour's throughput (and its chart) and
    lifetime totals."""
    request.state.viewer = await admit(request, READ)
    router = await _ledger(request).opened()
    names = await router.read(readers.queue_names())
    counts, details, totals = await asyncio.gather(
        _by_partition(router, names, readers.status_counts),
        _by_partition(router, names, lambda group: throughput.queue_details(group, now_ms())),
        _by_partition(router, names, queue_totals),
    )
    return [
        {"name": n, "counts": counts[n], "detail": details[n], "totals": totals[n].outcomes,
         "chart": throughput_chart(details[n].throughput.minutes)}
        for n in names
    ]  # fmt: skip


@answered
async def overview(request: Request) -> Response:
    """Every queue: counts per status, paused, settings, the last hour's throughput as a chart,
    lifetime totals, and pause, resume and drain; the table refreshes itself (:func:`queue_table`)."""
    rows = await _queue_rows(request)
    return page(request, "overview.html", rows=rows, statuses=JOB_STATUSES, live=LIVE_SECONDS)


@answered
async def queue_table(request: Request) -> Response:
    """The queues page's table alone: what the page fetches again every few seconds."""
    rows = await _queue_rows(request)
    return page(request, "_queues.html", rows=rows, statuses=JOB_STATUSES, live=LIVE_SECONDS, flash=None)


#: What each queue setting does, as declared: the queue page's hint on each setting's name.
SETTINGS_ABOUT = {name: field.description for name, field in QueueSettings.model_fields.items()}


@answered
async def queue(request: Request) -> Response:
    """A queue's jobs, one page of one status (or all) and tag (or any); ``?id=`` goes to a job."""
    name = queue_name(request)
    request.state.viewer = await admit(request, READ_QUEUE, queue=name)
    status, tag = _status(request), _tag(request)
    text = (request.query_params.get("search") or "").strip() or None
    number = positive_int(request, "page", 1, MAX_PAGE)
    ledger = await (await _ledger(request).opened()).queue_runner(name)
    settings = await ledger.read(readers.queue(name))
    counts = (await ledger.read(readers.status_counts([name])))[name]
    context: dict[str, Any] = {
        "queue": name, "settings": settings.view(), "about": SETTINGS_ABOUT, "counts": counts,
        "statuses": JOB_STATUSES, "status": status, "tag": tag, "search": text, "number": number,
    }  # fmt: skip
    if text is not None:
        found = await ledger.read(_searched(name, text, status, tag, request.query_params.get("after")))
        return page(request, "queue.html", 200, **context, jobs=found["jobs"], more=False, next=found["next"])
    listed = await ledger.read(job_pages.queue_jobs(name, status, tag, number, PAGE_SIZE))
    return page(request, "queue.html", 200, **context, jobs=listed.jobs, more=listed.more, next=None)


def _searched(queue: str, text: str, status: str | None, tag: str | None, after: str | None) -> Read[Any]:
    """A page of the queue's jobs holding ``text`` (as ``GET /queue/{q}/jobs?search=``: a bounded
    scan), from after the job id ``after``."""
    cursor = 0 if after is None else valid_job_id(after)
    if cursor is None:
        raise BadRequest(f"after must be a job id, not {(after or '')[:30]!r}")
    return job_search.search(queue, job_search.checked_text(text, tag), status, PAGE_SIZE, cursor)


async def search(request: Request) -> Response:
    """The search form's answer: to the job's page."""
    raw = (request.query_params.get("id") or "").strip()
    found = valid_job_id(raw)
    if found is None:
        return error_page(request, 400, f"job ids are positive integers, not {raw!r}")
    return RedirectResponse(f"/ui/job/{found}", status_code=303)


def timeline(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The job's events, each with ``since``: ms since the event before it (None for the first)."""
    out, previous = [], None
    for item in items:
        at = parse_time(item["at"])
        out.append({"item": item, "at_ms": at, "since": None if previous is None else at - previous})
        previous = at
    return out


async def _job_fields(request: Request, jid: int) -> dict[str, Any] | None:
    """The job's fields; None once it is deleted or expired (its history remains)."""
    try:
        fields: dict[str, Any] = await _ledger(request).read(readers.job(jid))
    except NotFound:
        return None
    return fields


def file_actors(items: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Who stored each file and result of a job, from its events: ``{"files": {name: actor},
    "results": {name: actor}}`` (a result added again under a name: the latest)."""
    found: dict[str, dict[str, str]] = {"files": {}, "results": {}}
    for item in items:
        if item["type"] == "job_created":
            found["files"].update((f["name"], item["actor"]) for f in item["data"].get("files") or [])
        elif item["type"] == "job_result_added":
            found["results"][item["data"]["name"]] = item["actor"]
    return found


def gone_how(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How a job that no longer exists went, from its last ``job_expired`` or ``job_deleted`` event:
    ``how`` (expired or deleted), ``at``, ``actor`` and, for a deletion, its ``reason``."""
    for item in reversed(items):
        if item["type"] in ("job_expired", "job_deleted"):
            how = "expired" if item["type"] == "job_expired" else "deleted"
            reason = (item["data"] or {}).get("reason")
            return {"how": how, "at": item["at"], "actor": item["actor"], "reason": reason}
    return None


@answered
async def job(request: Request) -> Response:
    """A job: its status and actions, its timeline (archived events included), then its fields,
    files and results, input and output, errors."""
    jid = job_id(request)
    request.state.viewer = await admit(request, READ_JOB, job=jid)
    fields = await _job_fields(request, jid)
    items = await job_history(_ledger(request), jid, request.state.parts.archive)
    sealed: ServedLogs | None = request.state.parts.sealed
    seal = None if sealed is None else await job_seal(sealed, await _ledger(request).opened(), jid)
    return page(
        request, "job.html", job_id=jid, job=fields, events=timeline(items), actors=file_actors(items),
        seal=seal, gone=None if fields else gone_how(items),
    )  # fmt: skip


@answered
async def job_receipt(request: Request) -> Response:
    """``/ui/job/{id}/receipt``: the job's receipt (``GET /job/{id}/receipt``) as a file to keep,
    through the dashboard's session."""
    jid = job_id(request)
    request.state.viewer = await admit(request, READ_JOB, job=jid)
    sealed: ServedLogs | None = request.state.parts.sealed
    if sealed is None:
        raise NotFound("the ledger is not sealed here: it has no receipts")
    found = await job_receipt_of(sealed, await _ledger(request).opened(), jid)
    disposition = f'attachment; filename="job-{jid}-receipt.json"'
    return JSONResponse(found, headers={"content-disposition": disposition})


@answered
async def job_state(request: Request) -> Response:
    """The changing parts of a job's page (its head: status, actions, key facts; and below the
    timeline its fields, files and results, input, output, errors): a fragment the page fetches
    again each time its timeline receives an event."""
    jid = job_id(request)
    request.state.viewer = await admit(request, READ_JOB, job=jid)
    fields = await _job_fields(request, jid)
    needs_history = not fields or fields.get("results")
    items = await job_history(_ledger(request), jid, request.state.parts.archive) if needs_history else []
    return page(
        request, "_job_state.html", job_id=jid, job=fields, actors=file_actors(items) if fields else None,
        gone=None if fields else gone_how(items), oob=True, flash=None,
    )  # fmt: skip


async def _download(request: Request, kind: str) -> Response:
    """A file or result of a job, streamed from the blob store, with the API's headers."""
    jid = job_id(request)
    request.state.viewer = await admit(request, READ_JOB, job=jid)
    name = request.path_params["name"]
    fields = await _job_fields(request, jid)
    if fields is None:
        return error_page(request, 404, f"job {jid} no longer exists (deleted, or expired)")
    ref = next((r for r in fields.get(kind) or [] if r["name"] == name), None)
    if ref is None:
        return error_page(request, 404, f"job {jid} has no {kind[:-1]} named {name!r}")
    try:
        what, file = (
            f"{kind[:-1]} {name!r} of job {jid}",
            FileRef(**{k: ref[k] for k in FileRef.model_fields}),
        )
        return await blob_response(request, request.state.blobs, file, what)
    except NotFound:
        return error_page(
            request, 404, f"the blob of {kind[:-1]} {name!r} ({ref['sha256']}) is not in the store"
        )


@answered
async def job_file(request: Request) -> Response:
    """``/ui/job/{id}/files/{name}``: one of the job's files, through the dashboard's session."""
    return await _download(request, "files")


@answered
async def job_result(request: Request) -> Response:
    """``/ui/job/{id}/results/{name}``: one of the job's results, through the dashboard's session."""
    return await _download(request, "results")


async def _recent(request: Request, flt: EventFilter) -> tuple[list[Event], str | None]:
    """The newest events matching ``flt``, newest first, and where the page's live feed starts: on a
    ledger split into partitions, of every partition ``flt`` concerns, merged, the feed starting in
    each after its newest shown or, with none shown, at the end it had before they were read."""
    router = await _ledger(request).opened()
    if router.partitioning.count == 1:
        found = await router.home.read(recent(RECENT_EVENTS, flt))
        return found, found[0].id if found else None
    where = concerned(router.partitioning, flt)
    ends = await asyncio.gather(*(live_end(router.runners[p]) for p in where))
    lists = await asyncio.gather(*(router.runners[p].read(recent(RECENT_EVENTS, flt)) for p in where))
    shown = newest_first(dict(zip(where, lists, strict=True)), RECENT_EVENTS)
    cursor = Cursor.start(router.partitioning.count)
    for p, end in zip(where, ends, strict=True):
        newest_shown = next((e.id for q, e in shown if q == p), end)
        cursor = cursor.moved(p, max(end, newest_shown, key=id_key))
    return [e for _, e in shown], cursor.token()


@answered
async def events(request: Request) -> Response:
    """The newest events matching the filters, then new ones live."""
    request.state.viewer = await admit(request, READ)
    flt = event_filter(request)
    found, after = await _recent(request, flt)
    query = {k: v for k, v in (("type", flt.type), ("queue", flt.queue), ("job", flt.job),
                               ("actor", flt.actor)) if v is not None}  # fmt: skip
    return page(
        request, "events.html", events=[e.item() for e in found], filters=query, types=sorted(EVENT_TYPES),
        after=after,
    )  # fmt: skip


@answered
async def launchers(request: Request) -> Response:
    request.state.viewer = await admit(request, READ)
    return page(request, "launchers.html", launchers=await _ledger(request).read(all_launchers()))


def _whole_extent(parts: list[Extent]) -> Extent:
    """The partitions' streams as one: their events added up, the oldest first id, the newest last."""
    if len(parts) == 1:
        return parts[0]
    firsts = [p.first for p in parts if p.first is not None]
    lasts = [p.last for p in parts if p.last is not None]
    return Extent(
        sum(p.length for p in parts),
        min(firsts, key=id_key) if firsts else None,
        max(lasts, key=id_key) if lasts else None,
    )


def _whole_archive(parts: list[ArchiveRecord | None]) -> ArchiveRecord | None:
    """The partitions' archives as one: their events added up, up to the newest, in the store that
    holds each partition's (one folder per partition)."""
    held = [p for p in parts if p is not None]
    if len(held) <= 1:
        return held[0] if held else None
    where = held[0].location.rpartition("/")[0]
    return ArchiveRecord(where, max((p.last_id for p in held), key=id_key), sum(p.count for p in held))


@answered
async def ledger(request: Request) -> Response:
    """The ledger: how many events the stream holds, and what retention has archived; on a split
    ledger, the whole and each partition."""
    request.state.viewer = await admit(request, READ)
    router = await _ledger(request).opened()
    held = await asyncio.gather(*(r.read(extent()) for r in router.runners))
    archived = await asyncio.gather(*(r.read(record()) for r in router.runners))
    partitions = (
        list(zip(router.partitioning.namespaces, held, archived, strict=True)) if len(held) > 1 else []
    )
    run = request.app.state.verify_runs.get(request.query_params.get("run", ""))
    return page(
        request, "ledger.html", extent=_whole_extent(held), archive=_whole_archive(archived), run=run,
        partitions=partitions, seal=await _sealing(request, router),
    )  # fmt: skip


@dataclass(frozen=True)
class SealRow:
    """One log on the ledger page: its latest checkpoint, and its seal lag in seconds."""

    partition: int
    published: Published
    lag: float


async def _sealing(request: Request, router: AsyncPartitioned) -> list[SealRow] | None:
    """Each partition's latest checkpoint and seal lag; None when the ledger is not sealed here."""
    sealed: ServedLogs | None = request.state.parts.sealed
    if sealed is None:
        return None
    logs = sealed.each(router)
    found = await asyncio.to_thread(lambda: [published(log) for log in logs])
    states = await seal_states(router)
    now = router.clock()
    return [SealRow(p, f, s.lag_ms(now) / 1000) for p, (f, s) in enumerate(zip(found, states, strict=True))]


@answered
async def verify_result(request: Request) -> Response:
    """A verify run's result (a fragment the ledger page polls while the run goes on)."""
    request.state.viewer = await admit(request, ADMIN)
    run = request.app.state.verify_runs.get(request.path_params["run"])
    if run is None:
        raise NotFound("no such verify run in this server's memory (it may have restarted)")
    return page(request, "_verify.html", run=run)


async def signin(request: Request) -> Response:
    """The sign-in form (with auth off there is nothing to sign in to)."""
    target = safe_next(request.query_params.get("next"))
    if not auth_on(request):
        return RedirectResponse(target, status_code=303)
    token, _, _ = await token_of(request)
    return page(request, "signin.html", next=target, signed_in_as=token.name if token else None)
