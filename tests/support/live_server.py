"""A real jobledger HTTP server for the client, worker and CLI tests: the app served by uvicorn in a
background thread on a free port, on a test's namespace, with no scheduler task unless asked for
(tests drive the scheduler with ``jobledger.scheduler.loop.tick``)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from jobledger.blobs import BlobStore
from jobledger.runtime.config import config_from
from jobledger.server.app import create_app
from tests.support.blobs import temporary_store

T = TypeVar("T")


@contextmanager
def live_server(
    redis_url: str,
    namespace: str,
    listen_port: int = 0,
    blobs: BlobStore | None = None,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
    run_scheduler: bool = False,
    sealed_in: Path | None = None,
    **server: Any,
) -> Iterator[str]:
    """Serve the app on 127.0.0.1 (on ``listen_port``, else a port the OS picks) while the block runs;
    yields its base URL.  ``blobs``: the store of the jobs' files (else one in a temporary directory);
    ``wrap``: what serves instead of the app, given the app (a server of another version, say);
    ``run_scheduler``: run the scheduler's checks in the app, as ``serve`` does; ``sealed_in``: a
    sealed ledger, its key and published files in that directory (sealed every 0.1 s by the
    scheduler, when it runs)."""
    with contextlib.ExitStack() as stack:
        if blobs is None:
            blobs = stack.enter_context(temporary_store())
        serving = _serving(redis_url, namespace, listen_port, blobs, server, wrap, run_scheduler, sealed_in)
        yield stack.enter_context(serving)


@contextmanager
def _serving(
    redis_url: str,
    namespace: str,
    listen_port: int,
    blobs: BlobStore,
    server: dict[str, Any],
    wrap: Callable[[ASGIApp], ASGIApp] | None,
    run_scheduler: bool = False,
    sealed_in: Path | None = None,
) -> Iterator[str]:
    raw: dict[str, Any] = {"redis": {"key_namespace": namespace}, "server": server, "ledger": {"seal": False}}
    if sealed_in is not None:
        raw |= {"ledger": {"seal_interval": "0.1s"}, "blobs": {"url": str(sealed_in / "blobs")},
                "embedded": {"data_dir": str(sealed_in)}}  # fmt: skip
    config = config_from(raw)
    app: ASGIApp = create_app(config, redis_url, run_scheduler=run_scheduler, blobs=blobs)
    if wrap is not None:
        app = wrap(app)
    # asyncio's own loop, as ``jobledger serve`` runs the app (uvicorn's "auto" would take uvloop)
    uv = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=listen_port,
            loop="asyncio",
            lifespan="on",
            log_level="warning",
            access_log=False,
        )
    )
    thread = threading.Thread(target=uv.run, name="live-server", daemon=True)
    thread.start()
    try:
        eventually(lambda: uv.started or not thread.is_alive(), timeout=10)
        if not uv.started:
            raise RuntimeError("the test server did not start")
        port = uv.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        uv.should_exit = True
        thread.join(timeout=10)


def without_route(method: str, path: str) -> Callable[[ASGIApp], ASGIApp]:
    """A ``wrap`` for :func:`live_server`: the app as a server without that route would serve it
    (404 with a JSON error, as Starlette answers a path it does not know)."""

    def wrap(app: ASGIApp) -> ASGIApp:
        async def serve(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["method"] == method and scope["path"] == path:
                await JSONResponse({"error": "not found"}, status_code=404)(scope, receive, send)
                return
            await app(scope, receive, send)

        return serve

    return wrap


def eventually(probe: Callable[[], T], timeout: float = 10.0, every: float = 0.01) -> T:
    """Poll ``probe`` until it returns something truthy (returned), failing after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s: last value {value!r}")
        time.sleep(every)
