"""Handlers of ``/info``, ``/health`` and ``/ready``."""

from __future__ import annotations

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger.runner import AsyncLedger
from jobledger.projections import readers
from jobledger.runtime.version import __version__
from jobledger.scheduler.loop import SchedulerState
from jobledger.server.errors import error_response


async def info(request: Request) -> Response:
    ledger: AsyncLedger = request.state.ledger
    return JSONResponse(await ledger.read(readers.info()))


async def version(request: Request) -> Response:
    return JSONResponse(__version__)


async def _ping(ledger: AsyncLedger) -> None:
    """PING Redis, once more on a dropped connection: after Redis restarts, each connection the pool
    kept from before fails once when next used, and a probe must not report that as Redis being down
    (a PING, unlike a command, is safe to send twice)."""
    try:
        await ledger.client.ping()
    except redis.ConnectionError:
        await ledger.client.ping()


async def health(request: Request) -> Response:
    """Always 200: ``healthy`` when Redis answers a PING, else ``unhealthy`` with the reason."""
    ledger: AsyncLedger = request.state.ledger
    try:
        await _ping(ledger)
    except (redis.RedisError, OSError) as exc:  # the answer, not an error
        return JSONResponse({"status": "unhealthy", "error": f"Redis is unreachable: {exc}"})
    return JSONResponse({"status": "healthy"})


async def ready(request: Request) -> Response:
    """200 when Redis answers a PING and this server's scheduler (if it runs one) runs and its
    last round succeeded; 503 with the reason otherwise (for load balancers and orchestrators)."""
    ledger: AsyncLedger = request.state.ledger
    try:
        await _ping(ledger)
    except (redis.RedisError, OSError) as exc:
        return error_response(503, f"not ready: Redis is unreachable: {exc}")
    checks: SchedulerState | None = request.state.scheduler
    if checks is not None and checks.stopped is not None:
        return error_response(503, f"not ready: the scheduler has stopped ({checks.stopped})")
    if checks is not None and checks.problem is not None:
        return error_response(503, f"not ready: the scheduler's checks fail: {checks.problem}")
    return JSONResponse({"status": "ready"})
