"""Following ``GET /events/stream``: Server-Sent Events decoded into :class:`Event`, and when an
event ends a job.

Shared by the sync and async clients, which only read lines.  The decoder keeps the id of the last
event block it saw, including the blocks the server sends without data (its starting position, and
its position at each keep-alive), so a follower that reconnects with ``Last-Event-ID`` resumes
exactly where it stopped, without receiving an event twice or missing one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from api.client.models import Event

STREAM_PATH = "/events/stream"
#: The server sends a keep-alive every 15 s; a read that waits longer than this has lost the server.
IDLE_READ_TIMEOUT = 30.0

#: Events after which a job is over: it ended, or it is gone.
ENDING = frozenset({"job_completed", "job_cancelled", "job_ended", "job_expired", "job_deleted"})
#: Events that end a job when their data says ``ended: true`` (no retry left).
ENDING_IF_ENDED = frozenset({"job_failed", "job_timed_out"})


def ends_job(event: Event) -> bool:
    """Whether the job of this event has ended (or is gone) once it happened."""
    return event.type in ENDING or (event.type in ENDING_IF_ENDED and bool(event.data.get("ended")))


def filter_params(type: str | None, queue: str | None, job: int | None) -> dict[str, str | int]:
    """The feed's filters as query parameters (only those given)."""
    given: dict[str, str | int | None] = {"type": type, "queue": queue, "job": job}
    return {k: v for k, v in given.items() if v is not None}


@dataclass
class SseDecoder:
    """Server-Sent Events, fed one line at a time (the spec's parsing, for the fields the feed uses)."""

    last_id: str | None = None
    _data: list[str] = field(default_factory=list)
    _id: str | None = None

    def feed(self, line: str) -> Event | None:
        """The event a blank line completes, if any; None for every other line."""
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> Event | None:
        if self._id is not None:
            self.last_id = self._id
        data, self._data, self._id = self._data, [], None
        if not data:
            return None
        return Event.model_validate(json.loads("\n".join(data)))

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
