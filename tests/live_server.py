"""A real jobledger HTTP server for the client, worker and CLI tests: the app served by uvicorn in a
background thread on a free port, on a test's namespace, with no scheduler task (tests drive the
scheduler with ``jobledger.scheduler.loop.tick``)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import uvicorn

from jobledger.blobs import BlobStore
from jobledger.runtime.config import Config
from jobledger.server.app import create_app
from tests.blob_support import temporary_store

T = TypeVar("T")


@contextmanager
def live_server(
    redis_url: str, namespace: str, listen_port: int = 0, blobs: BlobStore | None = None, **server: Any
) -> Iterator[str]:
    """Serve the app on 127.0.0.1 (on ``listen_port``, else a port the OS picks) while the block runs;
    yields its base URL.  ``blobs``: the store of the jobs' files (else one in a temporary directory)."""
    with contextlib.ExitStack() as stack:
        if blobs is None:
            blobs = stack.enter_context(temporary_store())
        yield stack.enter_context(_serving(redis_url, namespace, listen_port, blobs, server))


@contextmanager
def _serving(
    redis_url: str, namespace: str, listen_port: int, blobs: BlobStore, server: dict[str, Any]
) -> Iterator[str]:
    config = Config.model_validate({"redis": {"key_namespace": namespace}, "server": server})
    app = create_app(config, redis_url, run_scheduler=False, blobs=blobs)
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
