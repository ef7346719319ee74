"""Map the exception tree to HTTP: every error is a JSON body ``{"error": "..."}`` that says what
was wrong, with the status code its class names."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger.errors import JobLedgerError

if TYPE_CHECKING:
    from pydantic import ValidationError

log = logging.getLogger("jobledger.api")


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def describe(exc: ValidationError) -> str:
    """A pydantic error as one readable sentence per problem: ``field 'retries': ...``."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        parts.append(f"field '{where}': {msg}" if where else msg)
    return "; ".join(parts)


#: What a 401 answers in ``WWW-Authenticate``.
REALM = 'Bearer realm="jobledger"'


async def on_ledger_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, JobLedgerError)
    response = error_response(exc.status, exc.message)
    if exc.status == 401:  # a token the ledger no longer knows, found so by a command or a read
        response.headers["WWW-Authenticate"] = REALM + ', error="invalid_token"'
    return response


async def on_value_error(request: Request, exc: Exception) -> Response:
    """A pydantic ValidationError (a body or parameter that does not validate) is a 400; any other
    ValueError is unexpected.  pydantic is not loaded for this: a ValidationError exists only once
    pydantic-core is, so a server that has not loaded it yet has none to answer."""
    core = sys.modules.get("pydantic_core")
    if core is not None and isinstance(exc, core.ValidationError):
        return error_response(400, describe(exc))
    return await on_unexpected(request, exc)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code)
    response = error_response(exc.status_code, str(exc.detail))
    response.headers.update(exc.headers or {})  # e.g. Allow on a 405
    return response


async def on_disconnect(request: Request, exc: Exception) -> Response:
    """The client left (or was cut off as too slow) while its body came: no one reads the answer."""
    log.info("%s %s: the client left before its request body was whole", request.method, request.url.path)
    return error_response(400, "the request body was cut off")


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, f"internal error: {type(exc).__name__}")


HANDLERS = {
    JobLedgerError: on_ledger_error,
    ValueError: on_value_error,  # pydantic's ValidationError is one
    HTTPException: on_http_error,
    ClientDisconnect: on_disconnect,
    Exception: on_unexpected,
}
