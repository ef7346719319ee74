"""The message an action leaves for the page it redirects to: a short-lived cookie, shown once."""

from __future__ import annotations

from urllib.parse import quote, unquote

from starlette.requests import Request
from starlette.responses import Response

COOKIE = "jobledger_flash"
MAX_CHARS = 500


def leave(response: Response, request: Request, message: str) -> None:
    response.set_cookie(
        COOKIE, quote(message[:MAX_CHARS]), max_age=60, path="/ui", httponly=True, samesite="strict",
        secure=request.url.scheme == "https",
    )  # fmt: skip


def taken(request: Request, response: Response) -> None:
    """Forget the message once a page has shown it."""
    if COOKIE in request.cookies:
        response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")


def waiting(request: Request) -> str | None:
    raw = request.cookies.get(COOKIE)
    return unquote(raw)[:MAX_CHARS] if raw else None
