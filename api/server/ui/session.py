"""Who is looking at the dashboard, and whether a form post may act for them.

With auth on, signing in stores the token's secret in the ``jobledger_session`` cookie (HttpOnly,
SameSite=Strict, Path=/ui, Secure over TLS); every request looks the secret's digest up in the
ledger's token projection again, exactly as the API's bearer check does, so a revoked token's
session ends at once and the server keeps no session state.  With auth off, everyone is ``local``.

A form post is refused when the browser says it comes from another site (``Sec-Fetch-Site``, or an
``Origin`` that is not this server's: :mod:`jobledger.server.front_door`, for the API and the
dashboard alike), and, with auth on, when its ``csrf`` field is not the one derived from the
session's secret (compared in constant time).  A cross-site page can neither read
the cookie nor the field, so it cannot forge the pair.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.tokens import Token, digest
from jobledger.server.auth import ADMIN, Needs, token_and_queue
from jobledger.server.inputs import read_body

#: What each of the dashboard's actions needs, as the API's route for it does: requeue and cancel
#: are ``PATCH /job/{id}`` (``work:`` on the job's queue; a bulk one on each queue it touches),
#: delete is ``DELETE /job/{id}``; pause, resume, drain and fire are a queue's or a launcher's admin routes.
ACTIONS: dict[str, Needs] = {
    "requeue": Needs("work", "job"),
    "cancel": Needs("work", "job"),
    "delete": ADMIN,
    "pause": ADMIN,
    "resume": ADMIN,
    "drain": ADMIN,
    "fire": ADMIN,
}

COOKIE = "jobledger_session"
CSRF_LABEL = b"jobledger dashboard form:"
LOCAL = "local"


@dataclass(frozen=True)
class Viewer:
    """The person behind a request: the token's name (``local`` with auth off), the ``csrf`` value
    their forms carry ('' with auth off), and the token itself when there is one."""

    name: str
    csrf: str = ""
    token: Token | None = None

    @property
    def signed_in(self) -> bool:
        return self.token is not None

    def may(self, action: str, queue: str | None = None) -> bool:
        """Whether the viewer may take ``action`` (a job's, a queue's, or a bulk one's: the names of
        :data:`ACTIONS`) on ``queue`` (None: on jobs of any queue), so that a page offers only the
        buttons its viewer may press; the post is checked again whatever the page showed."""
        return self.token is None or allowed(ACTIONS[action], self.token, queue)  # auth off: all


def allowed(needs: Needs, token: Token, queue: str | None) -> bool:
    """Whether ``token`` may do what ``needs`` says whatever the queue, or on ``queue``."""
    return needs.allows(token, None) or (queue is not None and needs.allows(token, queue))


class Refused(Exception):
    """A request the dashboard will not serve: a page answers with ``status`` and ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class SignInNeeded(Exception):
    """No valid session with auth on: the page sends the browser to the sign-in form."""


def csrf_for(secret: str) -> str:
    return hashlib.sha256(CSRF_LABEL + secret.encode()).hexdigest()


def auth_on(request: Request) -> bool:
    return bool(request.app.state.auth)


async def token_of(request: Request, job: int | None = None) -> tuple[Token | None, str | None, str]:
    """The session's token (None: no cookie, or a secret the ledger does not know), the queue of
    ``job`` read with it, and the secret."""
    secret = request.cookies.get(COOKIE, "")
    if not secret:
        return None, None, ""
    presented = digest(secret)
    ledger: OpeningLedger = request.state.ledger
    token, job_queue = await token_and_queue(ledger, presented, job)
    if token is None or not hmac.compare_digest(token.digest, presented):
        return None, job_queue, secret
    return token, job_queue, secret


async def admit(
    request: Request, needs: Needs, *, job: int | None = None, queue: str | None = None
) -> Viewer:
    """The viewer of a page or action that ``needs`` something (on ``queue``, or on ``job``'s queue);
    raises :class:`SignInNeeded` or :class:`Refused` (403).  With auth on, the request's ledger then
    records what it does as the token's name."""
    if not auth_on(request):
        return Viewer(LOCAL)
    token, job_queue, secret = await token_of(request, job)
    if token is None:
        raise SignInNeeded
    on = queue if queue is not None else job_queue
    if not allowed(needs, token, on):
        # a job's queue is never named: a job elsewhere reads as one that does not exist
        where = (
            f" on queue '{queue}'"
            if queue is not None
            else " on a job of no queue it covers (or no such job)"
        )
        raise Refused(403, f"token '{token.name}' may not do this{where}: it needs {needs.describe()}")
    ledger: OpeningLedger = request.state.ledger
    request.state.ledger = ledger.as_actor(token.name)
    request.state.token, request.state.token_digest = token.name, token.digest  # a live feed ends with it
    return Viewer(token.name, csrf_for(secret), token)


async def form_of(request: Request) -> dict[str, str]:
    """An urlencoded form body (within the server's body limit), each field's first value."""
    raw = await read_body(request)
    fields = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


def check_csrf(viewer: Viewer, form: dict[str, str]) -> None:
    """Refuse (403) a form post of a session without that session's csrf value."""
    if viewer.signed_in and not hmac.compare_digest(form.get("csrf", ""), viewer.csrf):
        raise Refused(403, "refused: the form's csrf field is missing or wrong; reload the page")


def sign_in_redirect(request: Request) -> Response:
    """To the sign-in form, and back to this page after (a post goes back to the dashboard)."""
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.method != "GET":
        target = "/ui"
    return RedirectResponse(f"/ui/signin?next={quote(target, safe='')}", status_code=303)


def set_session(response: Response, request: Request, secret: str) -> None:
    response.set_cookie(
        COOKIE, secret, path="/ui", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


def clear_session(response: Response, request: Request) -> None:
    response.delete_cookie(
        COOKIE, path="/ui", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of the dashboard, never another site."""
    if target and target.startswith("/ui") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui"
