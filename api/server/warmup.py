"""What a server loads once it is ready, rather than before: the warm-up.

A server answers ``/ready`` once Redis answers a PING and its scheduler runs; building the app and
its lifespan loads only what that takes (the router, the runners, the probes).  The rest is loaded
by :class:`Warmup`, in one thread of its own, once the server is ready (it listens, and has asked
Redis for a PING as ``/ready`` does, answered or not), while the event loop serves:

- first the scheduler's loop, its checks, the sealer and the archive writer: the scheduler, counted as running
  by ``/ready`` from the start, starts its first round once they are loaded; then the ledger's
  commands, which the configured queues (``[queue.*]``) wait for, and prometheus_client with the
  ``/metrics`` handler (the app then builds its registry: :mod:`jobledger.server.process_metrics`);
- then every request handler with its request and event models (:func:`jobledger.server.routes.warm`);
- then the dashboard's pages, actions and live feeds, and the OpenAPI document's modules;
- then the commands' Functions libraries, composed in that thread and loaded into Redis where it
  lacks them (``then``: :func:`jobledger.server.info_handlers.load_functions`); a command sent
  before loads its own library on its first call.

A request that arrives during the warm-up and needs a module not loaded yet waits for it: it
imports the module itself, or, while the warm-up's thread is importing that very module, waits on
Python's import lock for the thread to finish it.  Either way it is answered as it would have been,
later by at most the warm-up's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

from jobledger.ledger.tasks import cancel_and_wait

log = logging.getLogger("jobledger.api")

#: What the warm-up loads first: what the scheduler and the configured queues wait for.
FIRST = ("jobledger.scheduler.loop", "jobledger.replay.archive.writer", "jobledger.ledger.commands",
         "jobledger.server.metrics")  # fmt: skip
#: What it loads after every route's handler: the dashboard, and the OpenAPI document's modules.
THEN = ("jobledger.server.ui.pages", "jobledger.server.ui.failed_page", "jobledger.server.ui.actions",
        "jobledger.server.ui.live", "jobledger.server.openapi")  # fmt: skip


class Warmup:
    """Loads :data:`FIRST`, every route's handler and :data:`THEN` in a thread once the server is
    ready: ``listening`` is set (at once when it is None: a server that does not say when it
    listens, such as a test's) and ``ping`` has returned or failed.  The thread holds the
    interpreter while it imports, so it starts only once the work ``/ready`` waits for (the
    connections to Redis made, a PING answered) is done."""

    def __init__(
        self,
        listening: asyncio.Event | None = None,
        ping: Callable[[], Awaitable[None]] | None = None,
        then: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.listening = listening
        self.ping = ping
        self.then = then
        self._ready: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="jobledger-warmup")

    async def _listening(self) -> None:
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._until_ready())
        await asyncio.shield(self._ready)

    async def _until_ready(self) -> None:
        if self.listening is not None:
            await self.listening.wait()
        if self.ping is not None:
            with contextlib.suppress(Exception):  # Redis out of reach: the warm-up does not wait for it
                await self.ping()

    async def module(self, name: str) -> ModuleType:
        """Module ``name``, loaded in the warm-up's thread once the server listens."""
        await self._listening()
        return await asyncio.get_running_loop().run_in_executor(self._thread, importlib.import_module, name)

    async def run(self) -> None:
        """The whole warm-up (a task of the lifespan's)."""
        await self._listening()
        started = time.perf_counter()
        await asyncio.get_running_loop().run_in_executor(self._thread, _load_all)
        log.debug("warm-up: modules loaded in %.0f ms", (time.perf_counter() - started) * 1000)
        if self.then is not None:
            with contextlib.suppress(Exception):  # Redis out of reach: each command loads its own
                await self.then()

    async def aclose(self) -> None:
        """Stop waiting (its PING with it) and load nothing more; an import under way finishes in
        its thread, which ends after it."""
        if self._ready is not None:
            await cancel_and_wait([self._ready])
        self._thread.shutdown(wait=False, cancel_futures=True)


def _load_all() -> None:
    from jobledger.server import routes

    for name in FIRST:
        importlib.import_module(name)
    routes.warm()
    for name in THEN:
        importlib.import_module(name)
    from jobledger.ledger.scripts import commands, function

    for command in commands():  # composed here, not on the loop: what the load sends
        function(command)
