"""Handlers of ``/info``, ``/health`` and ``/ready``.

The probes ask Redis on the connections the server keeps apart from the requests' (those of its
scheduler and of its follower of the ledger: ``request.state.background``), at most
:data:`PROBES` at once, so that no load on the request pool, and no flood of probes, makes a
probe fail for want of a connection."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger.errors import Unavailable
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.runner import FunctionsMissing
from jobledger.runtime.version import version as installed_version
from jobledger.scheduler.state import SchedulerState
from jobledger.server.errors import error_response

#: What a probe says of a Redis it cannot reach: never its address (the probes answer anyone; the
#: server's log has the details).
UNREACHABLE = "Redis is unreachable"

#: Probes of a process that ask Redis at once (the rest wait their turn).
PROBES = 4

log = logging.getLogger(__name__)


async def info(request: Request) -> Response:
    from jobledger.projections import readers  # the projections' readers: not needed by /ready

    ledger: OpeningLedger = request.state.ledger
    return JSONResponse(await ledger.read(readers.info()))


async def version(request: Request) -> Response:
    return JSONResponse(installed_version())


async def ping(ledger: OpeningLedger) -> None:
    """PING Redis (every node a partition of the ledger lives on), once more on a dropped connection:
    after Redis restarts, each connection the pool kept from before fails once when next used, and a
    probe must not report that as Redis being down (a PING, unlike a command, is safe to send twice)."""
    router = await ledger.opened()

    async def ping(client: Any) -> None:
        try:
            await client.ping()
        except redis.ConnectionError:
            await client.ping()

    await asyncio.gather(*(ping(runner.client) for runner in router.runners))


async def load_functions(ledger: OpeningLedger) -> None:
    """What a server's warm-up does last: load every command's library a node of the ledger lacks
    (the libraries are named by their code's digest: a node holding them all, whatever else it
    holds, loads nothing).  A server without Functions is logged as such."""
    router = await ledger.opened()
    try:
        loaded = await asyncio.gather(*(runner.load_functions() for runner in router.runners))
    except FunctionsMissing as exc:
        log.error("%s", exc)
        raise
    if any(loaded):
        log.info("loaded %d command libraries into Redis", sum(loaded))


async def _probe(request: Request) -> None:
    """PING Redis as a probe does: on the background connections, a few probes at a time."""
    probes: asyncio.Semaphore = request.state.probes
    async with probes:
        await ping(request.state.background)


async def health(request: Request) -> Response:
    """Always 200: ``healthy`` when Redis answers a PING, else ``unhealthy`` with the reason."""
    try:
        await _probe(request)
    except (redis.RedisError, OSError, Unavailable):  # the answer, not an error
        return JSONResponse({"status": "unhealthy", "error": UNREACHABLE})
    return JSONResponse({"status": "healthy"})


async def ready(request: Request) -> Response:
    """200 when Redis answers a PING, the configuration's ``[queue.*]`` and ``[launcher.*]`` sections
    are applied, and this server's scheduler (if it runs one) runs and its last round succeeded; 503
    with the reason otherwise (for load balancers and orchestrators)."""
    try:
        await _probe(request)
    except (redis.RedisError, OSError, Unavailable):
        return error_response(503, f"not ready: {UNREACHABLE}")
    declared: asyncio.Event | None = request.state.declared
    if declared is not None and not declared.is_set():
        return error_response(503, "not ready: the configured queues and launchers are not applied yet")
    checks: SchedulerState | None = request.state.scheduler
    if checks is not None and checks.stopped is not None:
        return error_response(503, "not ready: the scheduler has stopped")
    if checks is not None and checks.problem is not None:
        return error_response(503, "not ready: the scheduler's checks fail (the server's log says why)")
    return JSONResponse({"status": "ready"})
