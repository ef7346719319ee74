"""Handlers of ``/info`` and ``/health``."""

from __future__ import annotations

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from api import __version__
from ledger.runner import AsyncLedger
from projections import readers


async def info(request: Request) -> Response:
    ledger: AsyncLedger = request.state.ledger
    return JSONResponse(await ledger.read(readers.info()))


async def version(request: Request) -> Response:
    return JSONResponse(__version__)


async def health(request: Request) -> Response:
    """Always 200: ``healthy`` when Redis answers a PING, else ``unhealthy`` with the reason."""
    ledger: AsyncLedger = request.state.ledger
    try:
        await ledger.client.ping()
    except (redis.RedisError, OSError) as exc:  # the answer, not an error
        return JSONResponse({"status": "unhealthy", "error": f"Redis is unreachable: {exc}"})
    return JSONResponse({"status": "healthy"})
