"""The two applications the HTTP figure compares, as uvicorn factories (``--factory``).

- :func:`ours`: jobledger's own app (``jobledger.server.app.create_app``), no scheduler task.
- :func:`ours_auth`: the same app with ``[server] auth`` on (the load generator sends a token).
- :func:`ours_scheduled` and :func:`ours_sealed`: the app with its scheduler, as ``jobledger serve``
  runs it, sealing off and on (the sealing part compares them), over the data directory
  ``BENCH_DATA_DIR``.
- :func:`bare`: a bare Starlette app on the same paths, each endpoint reading its body and making
  exactly one Redis call (INCR) before answering what ours answers (201 + id, a fetched job, 204).

Both read the server and namespace from ``BENCH_REDIS_URL`` and ``BENCH_NAMESPACE``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jobledger.runtime.config import config_from
from jobledger.server.app import create_app


def _env() -> tuple[str, str]:
    return os.environ["BENCH_REDIS_URL"], os.environ.get("BENCH_NAMESPACE", "bench")


def ours(auth: bool = False) -> Starlette:
    """jobledger's application on the bench namespace."""
    url, namespace = _env()
    config = config_from(
        {"redis": {"key_namespace": namespace}, "server": {"log_level": "warning", "auth": auth}}
    )
    return create_app(config, url, run_scheduler=False)


def ours_auth() -> Starlette:
    """jobledger's application with auth on: every request's token looked up in the ledger."""
    return ours(auth=True)


def ours_scheduled(sealed: bool = False) -> Starlette:
    """jobledger's application with its scheduler in the same process, as ``jobledger serve`` runs
    it, sealing ``sealed`` (its key made in ``BENCH_DATA_DIR`` on the first start)."""
    url, namespace = _env()
    config = config_from(
        {"redis": {"key_namespace": namespace}, "server": {"log_level": "warning"},
         "embedded": {"data_dir": os.environ["BENCH_DATA_DIR"]}, "ledger": {"seal": sealed}}
    )  # fmt: skip
    return create_app(config, url)


def ours_sealed() -> Starlette:
    """:func:`ours_scheduled`, sealing: the sealer shares the process with the requests."""
    return ours_scheduled(sealed=True)


def bare() -> Starlette:
    """Starlette alone: every request one Redis call."""
    url, namespace = _env()
    counter = f"{{{namespace}}}:bare"
    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["redis"] = redis.asyncio.Redis.from_url(url)
        yield
        await state["redis"].aclose()

    async def create(request: Request) -> Response:
        await request.body()
        n = await state["redis"].incr(counter)
        return JSONResponse(n, status_code=201, headers={"location": f"/job/{n}"})

    async def fetch(request: Request) -> Response:
        n = await state["redis"].incr(counter)
        return Response(f'{{"id":{n},"input":null,"attempt":1}}', media_type="application/json")

    async def update(request: Request) -> Response:
        await request.body()
        await state["redis"].incr(counter)
        return Response(status_code=204)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "healthy"})

    routes = [
        Route("/queue/{queue}/job", create, methods=["POST"]),
        Route("/queue/{queue}/job", fetch, methods=["GET"]),
        Route("/job/{job_id}", update, methods=["PATCH"]),
        Route("/health", health, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
