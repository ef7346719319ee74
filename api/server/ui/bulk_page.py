"""The dashboard's bulk operations: requeue, cancel or delete every job the failed page's filter
matches, and an operation's progress page.

The failed page's "all matching" form posts its filter and an action to ``POST /ui/bulk``: the
answer is a page saying how many jobs match now (a dry run of the operation, through the same code
as ``POST /bulk``, nothing appended), asking to confirm; the post that confirms starts the
operation in this server's background, as ``POST /bulk`` does, and sends the browser to its page,
``/ui/bulk/{operation}``, whose counts refresh themselves until it has finished.  The operation
takes failed and timed-out jobs (the page's two statuses) in one run.  Scopes are the API's: the
single action's on every queue the operation may touch (``work:`` for requeue and cancel,
``admin`` for delete), the page itself needing ``read``.
"""

from __future__ import annotations

from urllib.parse import urlencode

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from jobledger.ledger.bulk import BulkRequest
from jobledger.ledger.durations import format_time
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.projections.failed_filter import ENDED_BADLY, FailedFilter
from jobledger.server.auth import READ
from jobledger.server.bulk_handlers import operation_view, recorded, touched_queues
from jobledger.server.bulk_runs import BulkRuns, Progress, run
from jobledger.server.inputs import positive_int
from jobledger.server.ui import flash
from jobledger.server.ui.actions import DONE, NEEDS, refuse_writes
from jobledger.server.ui.failed_page import FILTER_FIELDS, failed_filter
from jobledger.server.ui.render import answered, page
from jobledger.server.ui.session import Refused, Viewer, admit, check_csrf, form_of

#: How often an operation's page fetches its counts again while it runs.
LIVE_SECONDS = 1
#: The largest count the preview may hand to the operation's page as the jobs it expects.
MOST_EXPECTED = 10**12


def bulk_request(action: str, flt: FailedFilter, dry_run: bool) -> BulkRequest:
    """The operation acting on the failed and timed-out jobs ``flt`` matches."""
    body = {
        "action": action, "status": list(ENDED_BADLY), "dry_run": dry_run, "queue": flt.queue,
        "error_kind": flt.error_kind,
        "since": format_time(flt.since) if flt.since is not None else None,
        "until": format_time(flt.until) if flt.until is not None else None,
    }  # fmt: skip
    try:
        return BulkRequest.model_validate({k: v for k, v in body.items() if v is not None})
    except ValidationError as exc:
        raise BadRequest(f"not an operation: {exc.errors()[0]['msg']}") from None


async def check_queues(viewer: Viewer, router: AsyncPartitioned, body: BulkRequest) -> None:
    """403 unless the viewer may do the single action on every queue the operation may touch."""
    token, needs = viewer.token, NEEDS[body.action]
    if token is None or needs.allows(token, None):
        return
    names = [body.queue] if body.queue is not None else await touched_queues(router, body)
    refused = [name for name in names if not needs.allows(token, name)]
    if refused:
        shown = ", ".join(f"'{name}'" for name in refused[:5])
        why = f"a bulk {body.action} needs {needs.describe()} on every queue it touches"
        raise Refused(403, f"token '{token.name}' may not {body.action} jobs of queue {shown}: {why}")


def _described(flt: FailedFilter) -> str:
    """The filter in words, for the confirmation."""
    parts = [f"of queue {flt.queue}" if flt.queue else "of every queue"]
    if flt.error_kind:
        parts.append(f"whose latest error is a {flt.error_kind}")
    if flt.since is not None:
        parts.append(f"ended since {format_time(flt.since)}")
    if flt.until is not None:
        parts.append(f"ended before {format_time(flt.until)}")
    return " ".join(parts)


def _preview(request: Request, form: dict[str, str], flt: FailedFilter, matched: int) -> Response:
    """The page saying how many jobs match, asking to confirm (the same post with ``confirm=yes``)."""
    action = form["action"]
    kept = {k: v for k in FILTER_FIELDS if (v := form.get(k))}
    back = "/ui/failed" + (f"?{urlencode(kept)}" if kept else "")
    says = (
        f"{matched:,} failed or timed-out jobs {_described(flt)} match now. Each is {DONE[action]} in one "
        "operation recorded with your name; a job that changes meanwhile is skipped."
    )
    return page(
        request, "confirm.html", title=f"{action.capitalize()} {matched:,} matching jobs?",
        action="/ui/bulk", fields={"action": action, **kept, "expected": str(matched)}, says=says, back=back,
        button=f"{action.capitalize()} {matched:,} jobs",
    )  # fmt: skip


@answered
async def bulk_action(request: Request) -> Response:
    """``action`` = requeue | cancel | delete on every job the posted filter matches: first the
    count and a confirmation, then (``confirm=yes``) the operation, and its page."""
    form = await form_of(request)
    viewer = await admit(request, READ)
    request.state.viewer = viewer
    check_csrf(viewer, form)
    action = form.get("action", "")
    if action not in NEEDS:
        raise BadRequest(f"unknown action {action!r}: requeue, cancel or delete")
    flt = failed_filter(form)
    refuse_writes(request)
    ledger: OpeningLedger = request.state.ledger
    router = await ledger.opened()
    body = bulk_request(action, flt, dry_run=form.get("confirm") != "yes")
    await check_queues(viewer, router, body)
    if body.dry_run:
        counted = await run(router, body, Progress(None))
        return _preview(request, form, flt, counted.matched)
    runs: BulkRuns = request.state.parts.bulk_runs
    operation, _ = await runs.begin(ledger, body)
    expected = form.get("expected", "")
    shown = f"/ui/bulk/{operation}" + (f"?expected={expected}" if expected.isdigit() else "")
    response = RedirectResponse(shown, status_code=303)
    flash.leave(response, request, f"bulk {action} {operation} started by {viewer.name}")
    return response


async def _state(request: Request) -> dict[str, object]:
    """The operation of the path as ``GET /bulk/{operation}`` shows it, while this server runs it
    how many jobs it has matched so far, and how many its preview counted (``?expected=``)."""
    request.state.viewer = await admit(request, READ)
    operation = request.path_params["operation"]
    ledger: OpeningLedger = request.state.ledger
    runs: BulkRuns = request.state.parts.bulk_runs
    state = operation_view(operation, await recorded(ledger, operation), runs)
    here = runs.running.get(operation)
    state["matched_so_far"] = here.matched if here is not None else None
    state["expected"] = positive_int(request, "expected", 0, MOST_EXPECTED) or None
    return state


@answered
async def operation_page(request: Request) -> Response:
    """An operation: its action, filter, who started it when, and its counts, live while it runs."""
    return page(request, "bulk.html", op=await _state(request), live=LIVE_SECONDS)


@answered
async def operation_counts(request: Request) -> Response:
    """The operation's counts alone: what its page fetches again while it runs."""
    return page(request, "_bulk_counts.html", op=await _state(request), live=LIVE_SECONDS, flash=None)
