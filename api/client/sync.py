"""The synchronous client: the methods of :mod:`jobledger.client.methods`, each step done at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, closing
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx2

from jobledger.client.calls import ApiCall
from jobledger.client.faces import SyncFace
from jobledger.client.methods import ClientMethods
from jobledger.client.models import Event
from jobledger.client.steps import Blocking, Connect, NextLine, Pause, Step, Steps, advance, next_event
from jobledger.client.transfers import CHUNK, Receive, Received

R = TypeVar("R")
T = TypeVar("T")


class Client(ClientMethods, SyncFace):
    """A jobledger server over HTTP.

    ``url`` defaults to ``$JOBLEDGER_URL``, else ``http://127.0.0.1:8023``; ``token`` (an API token,
    sent as ``Authorization: Bearer``) to ``$JOBLEDGER_TOKEN``, else none.  Errors raise the
    :mod:`jobledger.client.errors` tree with the server's message.  Transient failures are retried as
    ``retry`` says (by default 4 tries, 0.1 s doubling to 2 s), only where resending is safe.
    Extra keyword arguments go to ``httpx2.Client`` (headers, auth, event hooks...).
    """

    _HTTP = httpx2.Client
    _http: httpx2.Client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def send(self, call: ApiCall[R]) -> R:
        """Send one call, retrying as :attr:`retry` allows; its parsed result."""
        return self._complete(self._sending(call))

    # Running the steps of jobledger.client.steps

    def _complete(self, work: Steps[T], stream: ExitStack | None = None) -> T:
        """Run ``work`` to its end; what it returns.  ``stream`` holds the stream it opens, if it
        is to outlive this run."""
        with ExitStack() as own, closing(work):
            stream = own if stream is None else stream
            try:
                step = next(work)
                while True:
                    step = advance(work, self._do(step, stream))
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]

    def _iterate(self, work: Steps[Any]) -> Iterator[Event]:
        """Run ``work`` to its end, handing on the events it yields."""
        with ExitStack() as stream, closing(work):
            while (event := self._complete(next_event(work), stream)) is not None:
                yield event

    def _do(self, step: Step, stream: ExitStack) -> Any:
        """The outcome of one step (see :mod:`jobledger.client.steps`), a network error included;
        ``stream`` holds the open stream."""
        try:
            if isinstance(step, ApiCall):
                with ExitStack() as files:  # what a streamed body opens, closed once it is sent
                    args = step.request_args(self._timeout, files, asynchronous=False)
                    return self._http.request(step.method, step.path, **args)
            if isinstance(step, Receive):
                return self._receive(step)
            if isinstance(step, Blocking):
                return step.work()
            if isinstance(step, Pause):
                return time.sleep(step.seconds)
            if isinstance(step, Connect):
                stream.close()
                response = stream.enter_context(self._http.stream("GET", step.path, **step.args))
                if not response.is_success:
                    response.read()
                return response, response.iter_lines()
            assert isinstance(step, NextLine), step
            return next(step.lines, None)
        except httpx2.TransportError as exc:
            return exc  # thrown into the steps where they asked

    def _receive(self, step: Receive) -> tuple[httpx2.Response, Received | None]:
        with self._http.stream("GET", step.path) as response:
            if not response.is_success:
                response.read()
                return response, None
            sink = step.sink()
            try:
                for chunk in response.iter_bytes(CHUNK):
                    sink.write(chunk)
            finally:
                received = sink.close()
            return response, received
