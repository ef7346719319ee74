"""One route of the HTTP API as a record: everything the app, the token check and the OpenAPI
document need to know of it, said once.

An :class:`ApiRoute` names its endpoint lazily, as ``"module:function"``, imported on the route's
first request (or by :func:`warm`), so that building the app imports no handler module; and its
OpenAPI operation by its name in :mod:`jobledger.server.openapi_paths`, loaded with the document.
:class:`ApiPath` is the Starlette route that serves the records of one path: it dispatches on the
method, so that a method the path does not take gets 405 with an Allow header naming all those it
does.  The table of records is :data:`jobledger.server.routes.ROUTES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from jobledger.server.auth import Needs, guarded
from jobledger.server.errors import error_response

if TYPE_CHECKING:
    from jobledger.server.openapi_paths import Operation

Endpoint = Callable[[Request], Awaitable[Response]]

METHODS = ("GET", "PUT", "POST", "PATCH", "DELETE")

#: The default of a field a record must be given: left out, it is refused by ``__post_init__`` with
#: the route named (Python's own error for a missing argument would not name it).
_REQUIRED: Any = None


class RouteError(TypeError):
    """A route record that cannot be built: the message names the route."""


@dataclass(frozen=True, eq=False)
class ApiRoute:
    """``method path``, served by ``endpoint`` (``"module:function"``), open to a token that has
    ``needs``, described by ``operation`` (a name in :mod:`jobledger.server.openapi_paths`).
    ``writes``: the route changes the ledger, so a read-only server refuses it (by default every
    method but GET writes).  ``idempotent``: the route takes an Idempotency-Key
    (:func:`jobledger.server.inputs.idempotency` reads it on no other).  ``checks_token``: the
    endpoint's first effect is a ledger command or read (a JSON body; a multipart one stores its files
    first), which checks the request's token again, so a token the server knows needs no lookup
    (:class:`jobledger.server.auth.KnownTokens`)."""

    method: str
    path: str
    endpoint: str
    needs: Needs = _REQUIRED
    operation: str = _REQUIRED
    writes: bool | None = None
    idempotent: bool = False
    checks_token: bool = False

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise RouteError(f"route {self.name}: the method is not one of {', '.join(METHODS)}")
        module, _, function = self.endpoint.partition(":")
        if not (module and function.isidentifier()):
            raise RouteError(f"route {self.name}: its endpoint {self.endpoint!r} is not 'module:function'")
        if not isinstance(self.needs, Needs):
            raise RouteError(f"route {self.name}: no scope (needs) given")
        if not (isinstance(self.operation, str) and self.operation.isidentifier()):
            raise RouteError(f"route {self.name}: no OpenAPI operation named")
        if self.writes is None:
            object.__setattr__(self, "writes", self.method != "GET")

    @property
    def name(self) -> str:
        """``METHOD /path``, as errors and the Idempotency-Key's request hash name the route."""
        return f"{self.method} {self.path}"

    @cached_property
    def handler(self) -> Endpoint:
        """The endpoint function, imported the first time it is asked for."""
        module, _, function = self.endpoint.partition(":")
        found: Endpoint = getattr(importlib.import_module(module), function)
        return found

    @cached_property
    def described(self) -> Operation:
        """The OpenAPI operation, loaded with :mod:`jobledger.server.openapi_paths`."""
        from jobledger.server import openapi_paths

        found = getattr(openapi_paths, self.operation, None)
        if not isinstance(found, openapi_paths.Operation):
            raise RouteError(f"route {self.name}: openapi_paths has no operation {self.operation}")
        return found

    async def __call__(self, request: Request) -> Response:
        request.state.route = self
        return await self.handler(request)


def warm(routes: Iterable[ApiRoute]) -> None:
    """Import every route's endpoint now (once a server is up, so no request pays for it)."""
    for route in routes:
        route.handler  # noqa: B018 (cached on the record)


def _allow(methods: Iterable[str]) -> str:
    """An Allow header's value, HEAD included wherever GET is (Starlette answers HEAD too)."""
    return ", ".join(sorted({*methods, *(["HEAD"] if "GET" in methods else [])}))


def refuse_write(allowed: Sequence[str]) -> Endpoint:
    """A read-only server's answer to a write: 405, naming the methods the path still takes."""
    headers = {"allow": _allow(allowed)}

    async def refuse(request: Request) -> Response:
        response = error_response(405, "this server is read-only: it serves a view and accepts no writes")
        response.headers.update(headers)
        return response

    return refuse


class ApiPath(Route):
    """The Starlette route of one path: its records, each served by its method (HEAD by GET's)."""

    def __init__(self, records: Sequence[ApiRoute], read_only: bool, auth: bool) -> None:
        self.records = tuple(records)
        reads = [r.method for r in records if not r.writes]
        endpoints: dict[str, Endpoint] = {}
        for record in records:
            if record.method in endpoints:
                raise RouteError(f"route {record.name} is in the table twice")
            endpoint = refuse_write(reads) if read_only and record.writes else record
            checks = record.checks_token and endpoint is record
            endpoints[record.method] = guarded(record.needs, endpoint, checks) if auth else endpoint

        async def by_method(request: Request) -> Response:
            return await endpoints["GET" if request.method == "HEAD" else request.method](request)

        super().__init__(records[0].path, by_method, methods=list(endpoints))


def api_paths(routes: Iterable[ApiRoute], read_only: bool, auth: bool = False) -> list[ApiPath]:
    """One :class:`ApiPath` per path of ``routes``, in the order the paths first appear.  With
    ``read_only``, each write answers 405; with ``auth``, each route is behind the token check of
    :mod:`jobledger.server.auth`."""
    by_path: dict[str, list[ApiRoute]] = {}
    for route in routes:
        by_path.setdefault(route.path, []).append(route)
    return [ApiPath(records, read_only, auth) for records in by_path.values()]
