"""What both clients do, written once as generators of steps; each client only does the steps.

A step is a piece of plain data naming what needs the network or the clock.  :class:`ClientBase`
holds the logic (retrying a call, paging through ``GET /events``, following the event feed,
waiting for a job) as generators that yield steps and are sent each one's outcome;
:class:`~jobledger.client.sync.Client` does a step at once, :class:`~jobledger.client.aio.AsyncClient`
awaits it.  A network error (``httpx2.TransportError``) is thrown into the generator where the step
was yielded, so the logic catches it as if it had made the request itself.

=====================  ===========================================================================
step                   what the client does, and the outcome sent back
=====================  ===========================================================================
an :class:`ApiCall`    sends it once: the response, whatever its status
:class:`Pause`         sleeps ``seconds``: None
:class:`Connect`       opens ``GET path`` as a stream, closing the one opened before (the last one
                       is closed when the steps end): the response (an error answer read whole)
                       and its lines, an iterator of the client's own kind
:class:`NextLine`      the next of those ``lines``: the line, or None once the server closed it
:class:`Receive`       streams ``GET path`` into a file, hashing it: the response and what was
                       :class:`Received` (None for an error answer, read whole)
:class:`Blocking`      calls ``work()``, which reads or writes files (the async client in a
                       thread): what it returns
an :class:`Event`      hands it to whoever iterates ``events`` / ``follow`` (see
                       :func:`next_event`): None
=====================  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeAlias, TypeVar

import httpx2

from jobledger.client import calls
from jobledger.client.calls import (
    ApiCall,
    auth_headers,
    error_message,
    resolve_token,
    resolve_url,
    unreachable,
)
from jobledger.client.errors import DigestMismatch, WaitTimeout, error_for
from jobledger.client.models import Event, Job
from jobledger.client.policy import Retry
from jobledger.client.sse import Deadline, Feed, FeedTimeout, StreamFailed, ends_job
from jobledger.client.transfers import Receive, Received, announced_sha256, problem_with

T = TypeVar("T")


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Connect:
    path: str
    args: dict[str, Any]


@dataclass(frozen=True)
class NextLine:
    lines: Any  # the lines a Connect gave: an Iterator[str] or an AsyncIterator[str]


@dataclass(frozen=True)
class Blocking:
    work: Callable[[], Any]


Step: TypeAlias = ApiCall[Any] | Pause | Connect | NextLine | Receive | Blocking | Event
#: Logic for both clients: yields steps, is sent their outcomes, returns its result.
Steps = Generator[Step, Any, T]


def advance(work: Steps[Any], outcome: Any) -> Step:
    """The next step of ``work``, given the outcome of the last: sent it, or thrown it when it is a
    network error."""
    if isinstance(outcome, httpx2.TransportError):
        return work.throw(outcome)
    return work.send(outcome)


def blocking(work: Callable[[], T]) -> Steps[T]:
    """The step that does ``work`` (file work that would hold up an event loop); its result."""
    result: T = yield Blocking(work)
    return result


def next_event(work: Steps[Any]) -> Steps[Event | None]:
    """The steps of ``work`` up to the next event it hands on: that event, or None once ``work``
    has ended.  A client hands on the events of ``work`` by running this again and again."""
    outcome: Any = None
    while True:
        try:
            step = advance(work, outcome)
        except StopIteration:
            return None
        if isinstance(step, Event):
            return step
        try:
            outcome = yield step
        except httpx2.TransportError as exc:
            outcome = exc


class ClientBase:
    """The settings and the logic of both clients; each subclass names its ``httpx2`` client class
    and runs the steps."""

    #: ``httpx2.Client`` or ``httpx2.AsyncClient``
    _HTTP: ClassVar[Callable[..., Any]]

    def __init__(
        self,
        url: str | None = None,
        *,
        timeout: float = 10.0,
        retry: Retry | None = None,
        token: str | None = None,
        **httpx2_options: Any,
    ) -> None:
        self.url = resolve_url(url)
        self.retry = retry or Retry()
        self._timeout = timeout
        #: The API token sent as ``Authorization: Bearer``: ``token``, else ``$JOBLEDGER_TOKEN``.
        self.token = resolve_token(token)
        headers = {**auth_headers(self.token), **httpx2_options.pop("headers", {})}
        self._http = self._HTTP(base_url=self.url, timeout=timeout, headers=headers, **httpx2_options)

    def _sending(self, call: ApiCall[T]) -> Steps[T]:
        """Send ``call``, again as :attr:`retry` allows; its parsed result."""
        tried = 0
        while True:
            tried += 1
            try:
                response = yield call
            except httpx2.TransportError as exc:
                delay = self.retry.after_error(call, exc, tried)
                if delay is None:
                    raise unreachable(self.url, exc) from exc
            else:
                delay = self.retry.after_status(call, response.status_code, tried)
                if delay is None:
                    return call.finish(response)
            yield Pause(delay)

    def _downloading(self, job_id: int, name: str, dest: Path) -> Steps[Received]:
        """One of a job's input files into ``dest``: streamed to a part file beside it, checked
        against the SHA-256 the server announces, moved into place once right.  A transfer that
        breaks or arrives wrong is tried again from the start, as :attr:`retry` allows (a download
        is always safe to repeat)."""
        step = Receive(calls.file_path(job_id, name), dest.with_name(f".{dest.name}.part"))
        tried = 0
        try:
            while True:
                tried += 1
                try:
                    response, received = yield step
                except httpx2.TransportError as exc:
                    if (delay := self.retry.backoff(tried)) is None:
                        raise unreachable(self.url, exc) from exc
                else:
                    if received is None:
                        if response.status_code != 503 or (delay := self.retry.backoff(tried)) is None:
                            raise error_for(response.status_code, error_message(response))
                    elif (problem := problem_with(received, response.headers)) is None:
                        step.into.replace(dest)
                        return received
                    elif (delay := self.retry.backoff(tried)) is None:
                        raise DigestMismatch(f"job {job_id} file {name!r}: {problem}")
                yield Pause(delay)
        finally:
            step.into.unlink(missing_ok=True)

    def _saving(self, path: str, dest: Path) -> Steps[Path]:
        """``GET path`` streamed into ``dest``: written to a part file beside it and moved into place
        once it hashes to the SHA-256 the server announces, when it announces one (else
        :class:`DigestMismatch`, nothing kept).  Sent once."""
        part = dest.with_name(dest.name + ".part")
        try:
            try:
                response, received = yield Receive(path, part)
            except httpx2.TransportError as exc:
                raise unreachable(self.url, exc) from exc
            if received is None:
                raise error_for(response.status_code, error_message(response))
            expected = announced_sha256(response.headers)
            if expected is not None and received.sha256 != expected:
                raise DigestMismatch(f"{dest.name}: the bytes hash to {received.sha256}, not {expected}")
            part.replace(dest)
            return dest
        finally:
            part.unlink(missing_ok=True)

    def _paging(self, after: str | None, filters: dict[str, str | int], page_size: int) -> Steps[None]:
        """Every event after ``after`` matching ``filters``, ``GET /events`` page by page, up to the
        ledger's current end."""
        while True:
            page = yield from self._sending(calls.list_events(after, page_size, filters))
            yield from page.events
            if page.next is None:
                return
            after = page.next

    def _following(
        self,
        after: str | None,
        filters: dict[str, str | int],
        deadline: Deadline,
        on_open: Callable[[], Steps[bool]] | None = None,
        stop_at: Callable[[Event], bool] | None = None,
    ) -> Steps[Event | None]:
        """The events after ``after`` matching ``filters``, from ``GET /events/stream``, reconnecting
        as :attr:`retry` allows (see :class:`~jobledger.client.sse.Feed`).  Without ``stop_at`` it
        hands on every event; with it, none, and it returns the first event ``stop_at`` accepts.
        Returns None when the steps of ``on_open`` (run each time the feed is connected) return
        True.  Raises :class:`FeedTimeout` at the deadline, and the server's error when it gives up."""
        feed = Feed(self.url, after, filters, self.retry, deadline)
        while True:
            try:
                response, lines = yield Connect(feed.call.path, feed.connect(self._timeout))
                if not response.is_success:
                    delay = feed.refused(response)
                elif on_open is not None and (yield from on_open()):
                    return None
                else:
                    while (line := (yield NextLine(lines))) is not None:
                        if (event := feed.line(line)) is None:
                            continue
                        if stop_at is None:
                            yield event
                        elif stop_at(event):
                            return event
                    delay = feed.ended()
            except httpx2.TransportError as exc:
                delay = feed.lost(exc)
            except StreamFailed as failure:
                delay = feed.failed(failure)
            yield Pause(feed.pause(delay))

    def _waiting(self, job_id: int, timeout: float | None) -> Steps[Job]:
        """The job once it has ended (see :meth:`jobledger.client.sync.Client.wait`)."""
        job = yield from self._sending(calls.get_job(job_id))
        if job.ended:
            return job

        def ended_meanwhile() -> Steps[bool]:
            nonlocal job
            job = yield from self._sending(calls.get_job(job_id))
            return job.ended

        try:
            ending = yield from self._following(
                None, {"job": job_id}, Deadline(timeout), ended_meanwhile, ends_job
            )
        except FeedTimeout:
            raise WaitTimeout(job_id, timeout or 0.0, job.status) from None
        if ending is None:
            return job
        return (yield from self._sending(calls.get_job(job_id)))
