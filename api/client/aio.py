"""The asynchronous client: the methods of :mod:`jobledger.client.methods`, each step awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, ExitStack
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx2

from jobledger.client.calls import ApiCall
from jobledger.client.faces import AsyncFace
from jobledger.client.methods import ClientMethods
from jobledger.client.models import Event
from jobledger.client.steps import Blocking, Connect, NextLine, Pause, Step, Steps, advance, next_event
from jobledger.client.transfers import CHUNK, Receive, Received

R = TypeVar("R")
T = TypeVar("T")


class AsyncClient(ClientMethods, AsyncFace):
    """A jobledger server over HTTP, for asyncio: the methods of :class:`~jobledger.client.sync.Client`,
    awaited, with the same ``url``, ``timeout`` and ``retry``; extra keyword arguments go to
    ``httpx2.AsyncClient``."""

    _HTTP = httpx2.AsyncClient
    _http: httpx2.AsyncClient

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def send(self, call: ApiCall[R]) -> R:
        """Send one call, retrying as :attr:`retry` allows; its parsed result."""
        return await self._complete(self._sending(call))

    # Running the steps of jobledger.client.steps, as the sync client does, awaited

    async def _complete(self, work: Steps[T], stream: AsyncExitStack | None = None) -> T:
        async with AsyncExitStack() as own:
            stream = own if stream is None else stream
            try:
                step = next(work)
                while True:
                    step = advance(work, await self._do(step, stream))
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            finally:
                work.close()

    async def _iterate(self, work: Steps[Any]) -> AsyncGenerator[Event, None]:
        async with AsyncExitStack() as stream:
            try:
                while (event := await self._complete(next_event(work), stream)) is not None:
                    yield event
            finally:
                work.close()

    async def _do(self, step: Step, stream: AsyncExitStack) -> Any:
        try:
            if isinstance(step, ApiCall):
                with ExitStack() as files:  # what a streamed body opens, closed once it is sent
                    args = step.request_args(self._timeout, files, asynchronous=True)
                    return await self._http.request(step.method, step.path, **args)
            if isinstance(step, Receive):
                return await self._receive(step)
            if isinstance(step, Blocking):
                return await asyncio.to_thread(step.work)
            if isinstance(step, Pause):
                return await asyncio.sleep(step.seconds)
            if isinstance(step, Connect):
                await stream.aclose()
                response = await stream.enter_async_context(self._http.stream("GET", step.path, **step.args))
                if not response.is_success:
                    await response.aread()
                return response, response.aiter_lines()
            assert isinstance(step, NextLine), step
            return await anext(step.lines, None)
        except httpx2.TransportError as exc:
            return exc  # thrown into the steps where they asked

    async def _receive(self, step: Receive) -> tuple[httpx2.Response, Received | None]:
        """As the sync client's, the file written in a thread (the event loop is not held up)."""
        async with self._http.stream("GET", step.path) as response:
            if not response.is_success:
                await response.aread()
                return response, None
            sink = await asyncio.to_thread(step.sink)
            try:
                async for chunk in response.aiter_bytes(CHUNK):
                    await asyncio.to_thread(sink.write, chunk)
            finally:
                received = await asyncio.to_thread(sink.close)
            return response, received
