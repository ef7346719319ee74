"""What the client sends and receives: job options in, jobs, queue settings and events out.

The answer models accept fields they do not declare (``extra="allow"``), so a newer server's extra
fields reach the caller instead of breaking an older client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from jobledger.client.errors import ClientError

#: A duration as the server accepts it: "30s", "1h15m5s", a number of seconds, or a timedelta.
DurationLike = str | int | float | timedelta


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class StoredFile(_Answer):
    """A file of a job, or a result: its name and the SHA-256, size and media type of its bytes."""

    name: str
    sha256: str
    size: int
    media_type: str = "application/octet-stream"


class StoredResult(StoredFile):
    """A result of a job: a file and the attempt that stored it (``at``: when, in the job's record)."""

    attempt: int
    at: datetime | None = None


class Job(_Answer):
    """A job as ``GET /job/{id}`` shows it (durations as compact strings, e.g. ``"5m"``)."""

    id: int
    queue: str | None = None
    status: str
    tags: list[str] | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    last_heartbeat: datetime | None = None
    input: Any = None
    output: Any = None
    timeout: str | None = None
    heartbeat_timeout: str | None = None
    expires_after: str | None = None
    retries: int = 0
    retries_attempted: int = 0
    retry_delays: list[str] | None = None  # null when the job has none, as in Ocypod
    ended: bool = False
    attempt: int = 0
    worker: str | None = None
    files: list[StoredFile] = []
    results: list[StoredResult] = []


class QueueSettings(_Answer):
    """A queue's settings as ``GET /queue/{q}`` shows them."""

    timeout: str
    heartbeat_timeout: str
    expires_after: str
    retries: int
    retry_delays: list[str] = []


class Event(_Answer):
    """One event of the ledger: ``{id, type, at, queue, job, actor, data}``; ``actor`` says who
    caused it (a token's name, ``local``, ``scheduler`` or ``launcher:ID``)."""

    id: str
    type: str
    at: datetime
    queue: str | None = None
    job: int | None = None
    actor: str = "local"
    data: dict[str, Any] = {}


@dataclass(frozen=True)
class EventPage:
    """One page of ``GET /events``: the events, and the cursor of the next page (None at the end)."""

    events: list[Event]
    next: str | None


@dataclass(frozen=True)
class FetchedJob:
    """A job handed to a worker: now running as ``attempt``, which its updates should name.
    ``heartbeat_timeout``: its duration text (``"0s"``: off), when the fetch asked for it;
    ``traceparent``: the W3C traceparent of the request that created it, if it had one."""

    id: int
    input: Any
    attempt: int
    files: tuple[StoredFile, ...] = ()
    heartbeat_timeout: str | None = None
    traceparent: str | None = None


@dataclass(frozen=True)
class Batched:
    """What ``PATCH /jobs`` answered: per update, in order, None when it went through or the error
    it was refused with (:class:`~jobledger.client.errors.NotFound`, ``Conflict``, ...); with a fetch,
    the jobs it started, or the error it was refused with (the updates stand either way)."""

    refusals: tuple[ClientError | None, ...]
    jobs: list[FetchedJob] | ClientError | None = None


@dataclass(frozen=True)
class Submitted:
    """What creating a job answered: its ``id``, and whether it was ``created`` (False: a live job
    of the queue already held its unique_key, and ``id`` is that job's)."""

    id: int
    created: bool


@dataclass(frozen=True)
class JobSpec:
    """A job to create: its input and options.  Options left as None take the queue's settings.
    ``run_at`` is a datetime or RFC 3339 text; ``retry_backoff`` is ``{"base", "factor", "max"}``."""

    input: Any = None
    tags: Sequence[str] | None = None
    timeout: DurationLike | None = None
    heartbeat_timeout: DurationLike | None = None
    expires_after: DurationLike | None = None
    retries: int | None = None
    retry_delays: Sequence[DurationLike] | None = None
    unique_key: str | None = None
    priority: int | None = None
    run_at: datetime | str | None = None
    delay: DurationLike | None = None
    quota_key: str | None = None
    max_queued_time: DurationLike | None = None
    retry_on: Sequence[str] | None = None
    no_retry_on: Sequence[str] | None = None
    retry_backoff: Mapping[str, Any] | None = None
    #: files already stored as blobs (``put_blob``), each ``{"name", "sha256"}`` (and a ``media_type``)
    files: Sequence[Mapping[str, Any]] | None = None

    @classmethod
    def of(cls, job: JobSpec | Mapping[str, Any]) -> JobSpec:
        """``job`` as a JobSpec: one already, or a dict of its fields (an unknown field is a
        TypeError naming it)."""
        return job if isinstance(job, JobSpec) else cls(**job)

    def body(self) -> dict[str, Any]:
        """The JSON body of ``POST /queue/{q}/job``: only the options given (the input as it is)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value if f.name == "input" else wire_value(value)
        return out


def wire_value(value: Any) -> Any:
    """An option's or a setting's value as JSON, told by its type rather than its name, so that no
    list of the options is kept here: a timedelta as seconds (a duration), a datetime as RFC 3339
    UTC, inside lists and mappings too (``retry_delays``, ``retry_backoff``, ``files``)."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, Mapping):
        return {k: wire_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [wire_value(v) for v in value]
    return value
