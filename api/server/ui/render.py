"""Rendering the dashboard: one Jinja2 environment (autoescaping every template), the filters that
show times, durations and JSON to a person, and the headers every dashboard answer carries."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import cache, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from jobledger.ledger.durations import format_time, parse_time
from jobledger.ledger.errors import JobLedgerError
from jobledger.server.ui import flash
from jobledger.server.ui.session import Refused, SignInNeeded, sign_in_redirect

if TYPE_CHECKING:
    from jinja2 import Environment

Endpoint = Callable[[Request], Awaitable[Response]]

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"

#: Scripts only from /ui/static (no inline script, no eval), nothing framed, forms only to us.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}

#: The pages of the nav bar: (path, label).
NAV = (
    ("/ui", "Queues"),
    ("/ui/events", "Live ledger"),
    ("/ui/failed", "Failed"),
    ("/ui/launchers", "Launchers"),
    ("/ui/ledger", "Ledger"),
)


def duration(ms: int | float | None) -> str:
    """A span of time for a person: ``850 ms``, ``4.2 s``, ``3 min 12 s``, ``2 h 5 min``, ``3 d 4 h``."""
    if ms is None:
        return ""
    ms = max(0, int(ms))
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    seconds = ms // 1000
    for unit, size, sub, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1)):
        if seconds >= size:
            whole, rest = divmod(seconds, size)
            part = rest // sub_size
            return f"{whole} {unit} {part} {sub}" if part else f"{whole} {unit}"
    return f"{seconds} s"  # not reached: under a minute is handled above


def iso(value: int | str | None) -> str:
    """A time as ISO 8601 UTC to the second (``2026-11-24T09:05:40Z``); '' for none."""
    if value is None or value == "":
        return ""
    ms = value if isinstance(value, int) else parse_time(value)
    text = format_time(ms) or ""
    return text[:19] + "Z"


def pretty_json(value: Any) -> str:
    """JSON for a person: indented, characters as they are (``<`` not ``\\u003c``); the template's
    autoescaping makes it safe in HTML."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def compact_json(value: Any) -> str:
    """The same on one line, for a short value shown inline."""
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def shown(value: Any) -> str:
    """A plain value for a person: ``true``/``false`` as JSON writes them, ``—`` for none."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def size(count: int | None) -> str:
    """A number of bytes for a person: ``850 B``, ``4.2 KiB``, ``1.5 GiB``."""
    if count is None:
        return ""
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"


def per_hour(count: int) -> str:
    return f"{count:,}/h"


def actions_for(job: dict[str, Any]) -> list[str]:
    """The actions a job's status allows, as the ledger's transitions do (requeue: a cancelled,
    failed or timed-out job; cancel: one queued, scheduled, running, failed, or timed out and waiting
    to retry; delete: any), so a page offers none that would be refused."""
    status, ended = job.get("status"), job.get("ended")
    allowed = []
    if status in ("cancelled", "failed", "timed_out"):
        allowed.append("requeue")
    if status in ("queued", "scheduled", "running", "failed") or (status == "timed_out" and not ended):
        allowed.append("cancel")
    return [*allowed, "delete"]


@cache
def environment() -> Environment:
    """The templates' environment, made (and Jinja2 imported) when the first page is rendered: a
    server that no one opens the dashboard of never loads it."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        duration=duration,
        iso=iso,
        pretty_json=pretty_json,
        compact_json=compact_json,
        shown=shown,
        per_hour=per_hour,
        actions_for=actions_for,
        size=size,
    )
    env.globals["nav"] = NAV
    return env


def fragment(template: str, **context: Any) -> str:
    """A template rendered to text (a piece of a page, e.g. one SSE message)."""
    return environment().get_template(template).render(**context)


def page(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    """A whole page (or an htmx fragment) with the dashboard's headers."""
    context.setdefault("viewer", getattr(request.state, "viewer", None))
    context.setdefault("auth", bool(request.app.state.auth))
    context["path"] = request.url.path
    context.setdefault("flash", flash.waiting(request))
    html = environment().get_template(template).render(request=request, **context)
    response = HTMLResponse(html, status_code=code, headers=HEADERS)
    if context["flash"] is not None:
        flash.taken(request, response)
    return response


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return page(request, "error.html", code=status, status_code=status, message=message)


def answered(endpoint: Endpoint) -> Endpoint:
    """``endpoint`` with its refusals shown as pages: no session -> the sign-in form, out of scope ->
    403, a ledger error (no such job, bad input, Redis unreachable) -> its status and message."""

    @wraps(endpoint)
    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except SignInNeeded:
            return sign_in_redirect(request)
        except Refused as exc:
            return error_page(request, exc.status, exc.message)
        except JobLedgerError as exc:
            return error_page(request, exc.status, exc.message)

    return answer
