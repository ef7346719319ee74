"""A long-polling fetch (``GET /queue/{q}/job?wait=``) that notices its client hanging up.

A worker that stops, or gives up a poll, closes its connection while the server still waits for a
job on its behalf.  Were the server to go on waiting, the next job to come would be started for
nobody and stay running until its timeout (then spend a retry, or end timed out).  So the wait
listens for the client's disconnect too: once the client is gone it fetches nothing more, and the
jobs of a fetch that ran as the client left are handed back (``job_returned``) at once.

A server that is stopping (``app.state.stopping`` set by ``serve`` at the first signal) ends every
long-poll at once with no job, rather than holding its shutdown for the rest of the wait.

A long-poll made with a token ends too when that token is revoked (:func:`jobledger.server.auth.
revocation`): it fetches nothing more and the handler answers 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import TracebackType
from typing import Any, Self

from starlette.requests import Request

from jobledger.ledger import commands
from jobledger.ledger.commands import Call, Fetched
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.watch import Subscription
from jobledger.server.auth import Revocation

log = logging.getLogger("jobledger.api")


class HangUp:
    """Within ``async with HangUp(request)``: whether the request's client has disconnected."""

    def __init__(self, request: Request, revocation: Revocation | None = None) -> None:
        self._receive = request.receive
        self._revocation = revocation
        self._stopping: asyncio.Event | None = getattr(request.app.state, "stopping", None)
        self._listener: asyncio.Future[None] | None = None

    async def __aenter__(self) -> Self:
        self._listener = asyncio.ensure_future(self._listen())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._listener is not None
        self._listener.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._listener

    async def _listen(self) -> None:
        """Return once the server reports the disconnect (a request body, if any, is read past),
        the server is stopping, or the request's token is revoked."""
        disconnect = asyncio.ensure_future(self._disconnect())
        waiting: set[asyncio.Future[Any]] = {disconnect}
        if self._stopping is not None:
            waiting.add(asyncio.ensure_future(self._stopping.wait()))
        if self._revocation is not None:
            waiting.add(asyncio.ensure_future(self._revocation.wait()))
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in waiting:
                future.cancel()

    async def _disconnect(self) -> None:
        with contextlib.suppress(Exception):
            while (await self._receive())["type"] != "http.disconnect":
                pass

    @property
    def gone(self) -> bool:
        """The client hung up, the server is stopping, or the token was revoked: no job goes out
        any more."""
        return self._listener is not None and self._listener.done()

    async def wait(self, woken: Subscription, timeout: float) -> None:
        """Until ``woken`` is woken, ``timeout`` seconds pass, or the client hangs up."""
        assert self._listener is not None
        waiting: asyncio.Future[Any] = asyncio.ensure_future(woken.wait(timeout))
        try:
            await asyncio.wait({waiting, self._listener}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()


async def long_poll(
    request: Request,
    ledger: OpeningLedger,
    call: Call[list[Fetched]],
    woken: Subscription,
    seconds: float,
    revocation: Revocation | None = None,
) -> list[Fetched]:
    """Run the fetch ``call`` until it starts jobs, ``seconds`` pass, the client hangs up, or the
    token is revoked (``revocation``); ``woken`` (subscribed before: no wake-up lost) says when to
    try again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    async with HangUp(request, revocation) as hangup:
        while not hangup.gone:
            jobs = await ledger.run(call)
            if jobs and hangup.gone:
                await _hand_back(ledger, jobs)
                return []
            if jobs or (remaining := deadline - loop.time()) <= 0:
                return jobs
            await hangup.wait(woken, remaining)
    return []


async def _hand_back(ledger: OpeningLedger, jobs: list[Fetched]) -> None:
    """Give back the jobs of a fetch nobody will receive (each as the attempt it started)."""
    updates = [(job.id, JobUpdate(status="queued", attempt=job.attempt)) for job in jobs]
    await ledger.run(commands.update_jobs(updates))
    log.info("a long-polling client hung up: job(s) %s handed back", ", ".join(str(j.id) for j in jobs))
