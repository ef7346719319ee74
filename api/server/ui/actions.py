"""The dashboard's form posts: requeue, cancel or delete a job, pause, resume or drain a queue, pause,
resume or fire a launcher, start a verify run, sign in and out.

A job action runs the same command as the API's route for it, needs the same scope, and is recorded
with the signed-in token's name as its actor (``local`` with auth off): requeue and cancel are
``PATCH /job/{id}`` to ``queued`` / ``cancelled`` (``work:`` on the job's queue), delete is
``DELETE /job/{id}`` (``admin``).  Pause and resume are the API's ``PUT /queue/{q}/pause|resume``
(``admin``); drain is a bulk cancel of every job waiting in the queue (queued or scheduled; running
ones finish), so the audit shows it as one operation and each job's event names it (``admin``).
A launcher's pause, resume and fire are the API's ``PUT /launcher/{id}/pause|resume`` and
``POST /launcher/{id}/fire`` (``admin``).
Delete and drain first answer with a page asking to confirm, and act only on the post that confirms.
Every post is refused (403, nothing appended) when it comes from another site
(:mod:`jobledger.server.front_door`, before the post reaches a handler) or lacks the session's csrf
value (:mod:`jobledger.server.ui.session`).
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Literal
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from jobledger.ledger import commands
from jobledger.ledger.bulk import BulkRequest
from jobledger.ledger.calls import Call
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.launcher_declarations import resume
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.tokens import digest
from jobledger.projections import launchers as launcher_readers
from jobledger.projections import readers, tokens
from jobledger.server.auth import ADMIN, Needs
from jobledger.server.bulk_runs import BulkRuns
from jobledger.server.inputs import job_id, queue_name
from jobledger.server.launcher_handlers import launcher_id
from jobledger.server.sealed_ledger import ServedLogs
from jobledger.server.ui import flash
from jobledger.server.ui.render import answered, page
from jobledger.server.ui.session import (
    ACTIONS,
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

#: What each job action needs, as the API's route for it does.
NEEDS: dict[str, Needs] = {action: ACTIONS[action] for action in ("requeue", "cancel", "delete")}
DONE = {"requeue": "requeued", "cancel": "cancelled", "delete": "deleted"}
#: Where an action may send the browser back to: the page it was taken on.
BACK = {"failed": "/ui/failed", "job": "/ui/job/{id}"}
QUEUE_ACTIONS = {"pause": "paused", "resume": "resumed", "drain": "drained"}
LAUNCHER_ACTIONS = {"pause": "paused", "resume": "resumed", "fire": "fired"}
#: The statuses of the jobs a drain cancels: those waiting in the queue.
DRAINED = ["queued", "scheduled"]
#: How long (s) a drain's post waits for its operation before it sends the browser to its page.
DRAIN_WAIT = 5.0


def _command(action: str, jid: int) -> Call[int]:
    if action == "delete":
        return commands.delete_job(jid)
    update = JobUpdate(status="queued") if action == "requeue" else JobUpdate(status="cancelled")
    return commands.update_job(jid, update)


def _confirm(request: Request, title: str, fields: dict[str, str], says: str, back: str) -> Response:
    """The page asking to confirm an action: the same post again with ``confirm=yes``, or back."""
    button = fields["action"].capitalize()
    return page(request, "confirm.html", title=title, action=request.url.path, fields=fields, says=says,
                back=back, button=button)  # fmt: skip


def refuse_writes(request: Request) -> None:
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
    refuse_writes(request)
    if action == "delete" and form.get("confirm") != "yes":
        return _confirm(
            request, f"Delete job {jid}?", {"action": "delete", "back": form.get("back", "")},
            "Its record, input and output go at once; its history stays in the ledger.", f"/ui/job/{jid}",
        )  # fmt: skip
    ledger: OpeningLedger = request.state.ledger
    await ledger.run(_command(action, jid))
    response = RedirectResponse(
        BACK.get(form.get("back", ""), "/ui/job/{id}").format(id=jid), status_code=303
    )
    flash.leave(response, request, f"job {jid} {DONE[action]} by {viewer.name}")
    return response


async def _drain(request: Request, ledger: OpeningLedger, name: str, actor: str, back: str) -> Response:
    """Cancel the queue's waiting jobs as one bulk operation, as many as waited when it began (jobs
    added meanwhile are not chased); back to the page with its count once it is done, or, past
    :data:`DRAIN_WAIT`, to the operation's page, where it goes on."""
    runs: BulkRuns = request.state.parts.bulk_runs
    body = BulkRequest.model_validate({"action": "cancel", "queue": name, "status": DRAINED})
    operation, task = await runs.begin(ledger, body)
    done, _ = await asyncio.wait({task}, timeout=DRAIN_WAIT)
    if task not in done:
        response = RedirectResponse(f"/ui/bulk/{operation}", status_code=303)
        flash.leave(response, request, f"queue {name} draining (operation {operation}) by {actor}")
        return response
    cancelled = task.result().done
    response = RedirectResponse(_back_to(name, back), status_code=303)
    flash.leave(response, request, f"queue {name}: {cancelled:,} waiting jobs cancelled by {actor}")
    return response


def _back_to(name: str, back: str) -> str:
    """Where a queue action sends the browser: the queue's page when it was taken there, else the
    queues page."""
    return f"/ui/queue/{quote(name, safe='')}" if back == "queue" else "/ui"


@answered
async def queue_action(request: Request) -> Response:
    """``action`` = pause | resume | drain on the path's queue (drain once confirmed); back to the
    queues page."""
    name = queue_name(request)
    form = await form_of(request)
    action = form.get("action", "")
    if action not in QUEUE_ACTIONS:
        raise BadRequest(f"unknown action {action!r}: pause, resume or drain")
    viewer = await admit(request, ADMIN, queue=name)
    request.state.viewer = viewer
    check_csrf(viewer, form)
    refuse_writes(request)
    ledger: OpeningLedger = request.state.ledger
    if action == "drain":
        runner = await (await ledger.opened()).queue_runner(name)
        await runner.read(readers.queue(name))  # none: 404, nothing asked
    if action == "drain" and form.get("confirm") != "yes":
        return _confirm(
            request, f"Drain queue {name}?", {"action": "drain", "back": form.get("back", "")},
            "Every job waiting in it (queued or scheduled) is cancelled; running jobs finish. "
            "New jobs can still be added while it drains.", "/ui",
        )  # fmt: skip
    if action == "drain":
        return await _drain(request, ledger, name, viewer.name, form.get("back", ""))
    await ledger.run(commands.pause_queue(name, action == "pause"))
    response = RedirectResponse(_back_to(name, form.get("back", "")), status_code=303)
    flash.leave(response, request, f"queue {name} {QUEUE_ACTIONS[action]} by {viewer.name}")
    return response


@answered
async def launcher_action(request: Request) -> Response:
    """``action`` = pause | resume | fire on the path's launcher; back to the launchers page."""
    form = await form_of(request)
    action = form.get("action", "")
    if action not in LAUNCHER_ACTIONS:
        raise BadRequest(f"unknown action {action!r}: pause, resume or fire")
    viewer = await admit(request, ADMIN)
    request.state.viewer = viewer
    check_csrf(viewer, form)
    refuse_writes(request)
    ledger: OpeningLedger = request.state.ledger
    found = await ledger.read(launcher_readers.launcher(await launcher_id(request)))
    said = f"launcher {found['name'] or found['id']} {LAUNCHER_ACTIONS[action]} by {viewer.name}"
    if action == "pause":
        await ledger.run(commands.pause_launcher(found["id"]))
    elif action == "resume":
        await ledger.run(resume(found["id"], found["type"], found["arguments"], found["tz"], ledger.clock()))
    else:
        fired: int = await ledger.run(commands.fire_launcher_now(found["id"]))
        said += f": job {fired}"
    response = RedirectResponse("/ui/launchers", status_code=303)
    flash.leave(response, request, said)
    return response


@answered
async def start_verify(request: Request) -> Response:
    """Start a verify run; htmx gets the result fragment (polling until done), a plain form post is
    sent to the ledger page, which shows the run."""
    form = await form_of(request)
    viewer = await admit(request, ADMIN)
    request.state.viewer = viewer
    check_csrf(viewer, form)
    refuse_writes(request)
    ledger: OpeningLedger = request.state.ledger
    router = await ledger.opened()
    sealed: ServedLogs | None = request.state.parts.sealed
    logs = None if sealed is None else sealed.each(router)
    run = request.app.state.verify_runs.start(viewer.name, router.partitioning.namespaces, logs)
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
