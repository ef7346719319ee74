"""The dashboard's form posts: requeue, cancel or delete a job, start a verify run, sign in and out.

A job action runs the same command as the API's route for it, needs the same scope, and is recorded
with the signed-in token's name as its actor (``local`` with auth off): requeue and cancel are
``PATCH /job/{id}`` to ``queued`` / ``cancelled`` (``work:`` on the job's queue), delete is
``DELETE /job/{id}`` (``admin``).  Every post is refused (403, nothing appended) when it comes from
another site (:mod:`jobledger.server.front_door`, before the post reaches a handler) or lacks the
session's csrf value (:mod:`jobledger.server.ui.session`).
"""

from __future__ import annotations

import hmac
from typing import Literal

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from jobledger.ledger import commands
from jobledger.ledger.calls import Call
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.tokens import digest
from jobledger.projections import tokens
from jobledger.server.auth import ADMIN, Needs
from jobledger.server.inputs import job_id
from jobledger.server.ui import flash
from jobledger.server.ui.render import answered, page
from jobledger.server.ui.session import (
    Refused,
    admit,
    auth_on,
    check_csrf,
    clear_session,
    form_of,
    safe_next,
    set_session,
)

Action = Literal["requeue", "cancel", "delete"]

#: What each action needs, as the API's route for it does.
NEEDS: dict[str, Needs] = {"requeue": Needs("work", "job"), "cancel": Needs("work", "job"), "delete": ADMIN}
DONE = {"requeue": "requeued", "cancel": "cancelled", "delete": "deleted"}
#: Where an action may send the browser back to: the page it was taken on.
BACK = {"failed": "/ui/failed", "job": "/ui/job/{id}"}


def _command(action: str, jid: int) -> Call[int]:
    if action == "delete":
        return commands.delete_job(jid)
    update = JobUpdate(status="queued") if action == "requeue" else JobUpdate(status="cancelled")
    return commands.update_job(jid, update)


def _refuse_writes(request: Request) -> None:
    if request.app.state.read_only:
        raise Refused(405, "this server is read-only: it serves a view and accepts no writes")


@answered
async def job_action(request: Request) -> Response:
    """``action`` = requeue | cancel | delete on the path's job; back to the page it came from."""
    jid = job_id(request)
    form = await form_of(request)
    action = form.get("action", "")
    if action not in NEEDS:
        raise BadRequest(f"unknown action {action!r}: requeue, cancel or delete")
    viewer = await admit(request, NEEDS[action], job=jid)
    request.state.viewer = viewer
    check_csrf(viewer, form)
    _refuse_writes(request)
    ledger: OpeningLedger = request.state.ledger
    await ledger.run(_command(action, jid))
    response = RedirectResponse(
        BACK.get(form.get("back", ""), "/ui/job/{id}").format(id=jid), status_code=303
    )
    flash.leave(response, request, f"job {jid} {DONE[action]} by {viewer.name}")
    return response


@answered
async def start_verify(request: Request) -> Response:
    """Start a verify run; htmx gets the result fragment (polling until done), a plain form post is
    sent to the ledger page, which shows the run."""
    form = await form_of(request)
    viewer = await admit(request, ADMIN)
    request.state.viewer = viewer
    check_csrf(viewer, form)
    _refuse_writes(request)
    ledger: OpeningLedger = request.state.ledger
    partitions = (await ledger.opened()).partitioning.namespaces
    run = request.app.state.verify_runs.start(viewer.name, partitions)
    if request.headers.get("hx-request"):
        return page(request, "_verify.html", code=202, run=run)
    return RedirectResponse(f"/ui/ledger?run={run.id}", status_code=303)


@answered
async def signin(request: Request) -> Response:
    """Check the token and keep its secret in the session cookie."""
    form = await form_of(request)
    target = safe_next(form.get("next"))
    if not auth_on(request):
        return RedirectResponse(target, status_code=303)
    secret = form.get("token", "").strip()
    presented = digest(secret) if secret else ""
    ledger: OpeningLedger = request.state.ledger
    token, _ = await ledger.read(tokens.token(presented)) if secret else (None, None)
    if token is None or not hmac.compare_digest(token.digest, presented):
        message = "unknown or revoked token" if secret else "enter a token"
        return page(request, "signin.html", code=401, next=target, error=message, signed_in_as=None)
    response = RedirectResponse(target, status_code=303)
    set_session(response, request, secret)
    return response


@answered
async def signout(request: Request) -> Response:
    response = RedirectResponse("/ui/signin" if auth_on(request) else "/ui", status_code=303)
    clear_session(response, request)
    return response
