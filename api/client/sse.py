"""Following ``GET /events/stream``: Server-Sent Events decoded into :class:`Event`, when to connect
again, and when an event ends a job.

Shared by the sync and async clients, which only read lines and sleep.  The decoder keeps the id of
the last event block it saw, including the blocks the server sends without data (its starting
position, and its position at each keep-alive), so a follower that reconnects with
``Last-Event-ID`` resumes exactly where it stopped, without receiving an event twice or missing one.
A block ``event: error`` (data ``{"error": ..., "status": ...}``) is the server saying why it ends the
feed: it becomes the matching :class:`~jobledger.client.errors.ClientError`, never an event.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pydantic

from jobledger.client import calls
from jobledger.client.errors import ClientError, ServerError, Unavailable, error_for
from jobledger.client.models import Event
from jobledger.client.policy import Retry

STREAM_PATH = "/events/stream"
#: The server sends a keep-alive every 15 s at most; a read that waits longer has lost the server.
IDLE_READ_TIMEOUT = 30.0

#: Events after which a job is over: it ended, or it is gone.
ENDING = frozenset({"job_completed", "job_cancelled", "job_ended", "job_expired", "job_deleted"})
#: Events that end a job when their data says ``ended: true`` (no retry left).
ENDING_IF_ENDED = frozenset({"job_failed", "job_timed_out"})


def ends_job(event: Event) -> bool:
    """Whether the job of this event has ended (or is gone) once it happened."""
    return event.type in ENDING or (event.type in ENDING_IF_ENDED and bool(event.data.get("ended")))


def filter_params(
    type: str | None, queue: str | None, job: int | None, actor: str | None = None
) -> dict[str, str | int]:
    """The feed's filters as query parameters (only those given)."""
    given: dict[str, str | int | None] = {"type": type, "queue": queue, "job": job, "actor": actor}
    return {k: v for k, v in given.items() if v is not None}


class StreamFailed(Exception):
    """The feed sent what ends it: an ``event: error`` block, or a block that is not an event."""

    def __init__(self, error: ClientError) -> None:
        super().__init__(error.message)
        self.error = error


def stream_error(text: str) -> ClientError:
    """The error an ``event: error`` block stands for.  Without a ``status`` it is a 503: the
    server could not go on reading the ledger (Redis unreachable), which trying again may mend."""
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return Unavailable(text or "the event feed failed", 503)
    message = str(body.get("error") or "the event feed failed")
    status = body.get("status")
    return error_for(status if isinstance(status, int) else 503, message)


@dataclass
class SseDecoder:
    """Server-Sent Events, fed one line at a time (parsed as the HTML standard's event-stream format
    says, for the fields the feed uses).  ``blocks`` counts the blocks completed, events or not."""

    last_id: str | None = None
    blocks: int = 0
    _data: list[str] = field(default_factory=list)
    _id: str | None = None
    _event: str = ""

    def feed(self, line: str) -> Event | None:
        """The event a blank line completes, if any; None for every other line.  Raises
        :class:`StreamFailed` for an error block."""
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> Event | None:
        if self._id is not None:
            self.last_id = self._id
        data, kind = "\n".join(self._data), self._event
        self._data, self._id, self._event = [], None, ""
        self.blocks += 1
        if kind == "error":
            raise StreamFailed(stream_error(data))
        if not data or kind not in ("", "message"):
            return None  # a position, a keep-alive, or a kind of block this client does not know
        try:
            return Event.model_validate_json(data)
        except pydantic.ValidationError:
            raise StreamFailed(
                ServerError(f"the event feed sent a block that is not an event: {data[:200]}")
            ) from None

    def headers(self) -> dict[str, str]:
        """The headers that resume the feed after the last event seen."""
        return {"last-event-id": self.last_id} if self.last_id else {}


class Deadline:
    """The end of a wait (None: none), and how long each read of the stream may block."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    def passed(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def pause(self, delay: float) -> float:
        """``delay``, cut short at the deadline."""
        left = self.left()
        return delay if left is None else max(0.0, min(delay, left))

    def read_timeout(self) -> float:
        """Block at most until the deadline, and never longer than the keep-alives allow."""
        left = self.left()
        return IDLE_READ_TIMEOUT if left is None else max(0.001, min(left, IDLE_READ_TIMEOUT))


class FeedTimeout(Exception):
    """The deadline of a followed feed passed (the waiting caller turns it into its own error)."""


class Feed:
    """One followed feed: where it resumes, and whether and when to connect again.

    Every connection is a try; the count starts again once a connection has delivered more than
    the server's opening block (an event or a keep-alive: the server reads the ledger again), so a
    feed that fails at once every time gives up after ``retry.attempts`` tries, while one that ran
    for hours and then lost its server gets every try afresh.
    """

    def __init__(
        self, url: str, after: str | None, filters: dict[str, str | int], retry: Retry, deadline: Deadline
    ) -> None:
        self.url, self.retry, self.deadline = url, retry, deadline
        self.decoder = SseDecoder(after)
        self.call = calls.stream_events(filters)
        self.tried = 0
        self._opening = 0

    def connect(self, timeout: float) -> dict[str, Any]:
        """Keyword arguments of the next ``stream("GET", STREAM_PATH, ...)``: one more try."""
        self.tried += 1
        self._opening = self.decoder.blocks
        return {
            "params": self.call.params,
            "headers": self.decoder.headers(),
            "timeout": httpx2.Timeout(timeout, read=self.deadline.read_timeout()),
        }

    def line(self, line: str) -> Event | None:
        """The event this line completes, if any (see :meth:`SseDecoder.feed`)."""
        event = self.decoder.feed(line)
        if self.decoder.blocks > self._opening + 1:
            self.tried = 0
        if self.deadline.passed():
            raise FeedTimeout
        return event

    def refused(self, response: httpx2.Response) -> float:
        """Seconds before trying again after an error answer, or its error raised."""
        delay = self.retry.after_status(self.call, response.status_code, self.tried)
        if delay is None:
            self.call.finish(response)
        return delay or 0.0

    def lost(self, exc: httpx2.TransportError) -> float:
        """Seconds before trying again after a lost connection (or a read that timed out)."""
        if self.deadline.passed():
            raise FeedTimeout from exc
        delay = self.retry.after_error(self.call, exc, self.tried)
        if delay is None:
            raise calls.unreachable(self.url, exc) from exc
        return delay

    def failed(self, failure: StreamFailed) -> float:
        """Seconds before trying again after the server ended the feed with an error, or the error."""
        delay = self.retry.after_status(self.call, failure.error.status or 0, self.tried)
        if delay is None:
            raise failure.error from None
        if self.deadline.passed():
            raise FeedTimeout from failure
        return delay

    def ended(self) -> float:
        """Seconds before connecting again after the server closed the feed without a word."""
        delay = self.retry.backoff(self.tried)
        if delay is None:
            raise Unavailable(f"the event feed of {self.url} keeps closing", None)
        return delay

    def pause(self, delay: float) -> float:
        return self.deadline.pause(delay)
