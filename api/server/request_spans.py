"""The server's spans, made only when tracing is on (:mod:`jobledger.runtime.tracing`; this module
imports OpenTelemetry, and the application imports it only then).

- :class:`RequestSpans`: an ASGI middleware, outermost, that makes one server span per HTTP request,
  named ``METHOD /route/{template}`` once routing has found the route (``METHOD`` alone when none
  did: a 404 names no path, so unknown paths do not each make a name), the child of the request's
  W3C ``traceparent`` header when it has a valid one.  Its status is an error on a 5xx answer.
- :class:`CommandSpans`: the runner's observer (the hook the command metrics use): a span for each
  ledger command a traced request (or any recording span) runs, its child, timed as the command was.
  Commands run outside any span (the scheduler's checks) make none: a trace of every tick of every
  check would bury the requests'.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobledger.contract.traceparent import HEADER, LENGTH
from jobledger.runtime.spans import remote_parent

_HEADER = HEADER.encode()
TRACER = "jobledger.server"


def _traceparent(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == _HEADER:
            return value.decode("latin-1") if len(value) == LENGTH else None
    return None


class RequestSpans:
    """One span per HTTP request (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.tracer = trace.get_tracer(TRACER)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        attributes = {"http.request.method": method, "url.path": scope["path"]}
        parent = remote_parent(_traceparent(scope["headers"]))
        with self.tracer.start_as_current_span(
            method, context=parent, kind=SpanKind.SERVER, attributes=attributes
        ) as span:

            async def answer(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = message["status"]
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                await send(message)

            try:
                await self.app(scope, receive, answer)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route is not None:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)


class CommandSpans:
    """A span for each command run inside a recording span (see the module's docstring)."""

    def __init__(self, then: Callable[[str, float], None] | None = None) -> None:
        self.tracer = trace.get_tracer(TRACER)
        self.then = then

    def observe(self, command: str, seconds: float) -> None:
        """The runner's observer: the span of a command that has just taken ``seconds``, then the
        observer this one was put before (the metrics')."""
        if trace.get_current_span().is_recording():
            end = time.time_ns()
            attributes = {"db.system.name": "redis", "db.operation.name": command}
            span = self.tracer.start_span(
                command, kind=SpanKind.CLIENT, attributes=attributes, start_time=end - int(seconds * 1e9)
            )
            span.end(end_time=end)
        if self.then is not None:
            self.then(command, seconds)
