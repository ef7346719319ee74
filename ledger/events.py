"""Event types: one pydantic model per type, versioned, and the stream entry format.

A stream entry holds ``type``, ``v`` (schema version of that type), ``at`` (ms since the epoch, UTC),
``job`` and ``queue`` where they apply, ``actor`` (who caused the event: see :data:`LOCAL`) and
``data`` (compact JSON of the type's own fields).  The stream id is the event's id.  Events are
built and applied inside the Lua commands; these models are the contract for the fields, decode
what is read back, and upcast an older ``v`` to the current model.

Opaque user JSON (a job's ``input`` and ``output``) travels inside ``data`` as its JSON *text*, so the
ledger keeps exactly the bytes the producer sent; :meth:`Event.item` decodes it for readers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from jobledger.contract.traceparent import PATTERN as TRACEPARENT

# the actors' names, kept where the runner reads them, and read here too by the models' users
from jobledger.ledger.actors import ACTOR_PATTERN, LOCAL, MAX_ACTOR, SCHEDULER, launcher_actor, valid_actor  # noqa: F401
from jobledger.ledger.durations import format_time
from jobledger.ledger.files import FileRef
from jobledger.ledger.requests import LEDGER_UNITS, Backoff, QueueSettings

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class EventData(BaseModel):
    """The type's own fields.  ``version`` is the current schema version of the type; ``upcasters``
    maps an old version to the function that turns its data into the next version's."""

    # defer_build: validators built by the first validation, not by every process's start
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    type: ClassVar[str]
    version: ClassVar[int] = 1
    upcasters: ClassVar[dict[int, Upcaster]] = {}
    json_text_fields: ClassVar[tuple[str, ...]] = ()


class ErrorData(BaseModel):
    """An error as a job records it; ``kind`` decides retry (retry_on / no_retry_on)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kind: str
    message: str = ""
    traceback: str | None = None  # where a worker's handler failed, its end kept (at most 8 KiB)


class QueueSettingsData(EventData, QueueSettings):
    """The queue's settings, as the request that set them validated them (durations in ms)."""


class QueueCreated(QueueSettingsData):
    type = "queue_created"


class QueueUpdated(QueueSettingsData):
    type = "queue_updated"


class QueueDeleted(EventData):
    type = "queue_deleted"


class QueuePaused(EventData):
    type = "queue_paused"


class QueueResumed(EventData):
    type = "queue_resumed"


class IdempotencyData(EventData):
    """A creating event made with an Idempotency-Key records it: ``idempotency_key``, its owner
    (``idempotency_owner``: the actor that sent it, a token's name or ``local``; a key is its
    sender's, and events made before keys had owners have none), the SHA-256 of the request
    (``request_hash``) and the end of the key's window (``idempotency_until``, ms).  Applying the
    event writes the lookup ``idem:{owner}:{key}`` (``idem:{key}`` without an owner) that answers the
    same request of the same sender again; a batch names every id it answered in
    ``idempotency_answer`` (in its first event only)."""

    idempotency_key: str | None = None
    idempotency_owner: str | None = None
    request_hash: str | None = None
    idempotency_until: int | None = None
    idempotency_answer: list[int] | None = None


class JobCreated(IdempotencyData):
    type = "job_created"
    json_text_fields = ("input",)

    # the resolved settings; those at 0 are left out of the stored data (older events carry them)
    timeout: int = 0
    heartbeat_timeout: int = 0
    expires_after: int = 0
    retries: int = 0
    retry_delays: list[int] = []
    retry_backoff: Backoff | None = None
    tags: list[str] = []
    input: str | None = None
    priority: int = 0
    run_at: int | None = None  # set when the job starts scheduled
    unique_key: str | None = None
    quota_key: str | None = None
    max_queued_time: int = 0
    retry_on: list[str] = []
    no_retry_on: list[str] = []
    launcher: str | None = None
    files: list[FileRef] = []  # the job's input files: references to blobs, never bytes
    # the W3C traceparent of the request that created it (absent: none was sent, or it was no
    # traceparent); handed out with the job, so that the handler's span is a child of the producer's
    traceparent: str | None = Field(default=None, pattern=TRACEPARENT)


class JobReleased(EventData):
    """A scheduled job's run_at came: it joins its queue."""

    type = "job_released"


class JobStarted(EventData):
    type = "job_started"

    attempt: int
    worker: str | None = None


class JobHeartbeat(EventData):
    type = "job_heartbeat"


class JobProgressed(EventData):
    type = "job_progressed"

    progress: int | None = None
    message: str | None = None


class JobOutputSet(EventData):
    type = "job_output_set"
    json_text_fields = ("output",)

    output: str


class JobCompleted(EventData):
    type = "job_completed"
    json_text_fields = ("output",)

    output: str | None = None


class JobFailed(EventData):
    """A running job failed; ``ended`` if no retry is left, else it is requeued at ``retry_at``."""

    type = "job_failed"
    json_text_fields = ("output",)

    ended: bool
    retry_at: int | None = None
    output: str | None = None
    error: ErrorData | None = None


def _timed_out_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v1 named the cause in ``reason``; v2 records it as an error, like a worker's failure."""
    out = {k: v for k, v in data.items() if k != "reason"}
    if data.get("reason") == "heartbeat":
        out["error"] = {"kind": "heartbeat_timeout", "message": "no heartbeat within heartbeat_timeout"}
    else:
        out["error"] = {"kind": "timeout", "message": "running longer than timeout"}
    return out


class JobTimedOut(EventData):
    """The scheduler found a job past a deadline: running past ``timeout`` or ``heartbeat_timeout``,
    or queued past ``max_queued_time``; or a client reported a running job timed out (with its
    ``output``, if it gave one).  v2: the cause is an error (kind timeout, heartbeat_timeout or
    queued_timeout) recorded in the job's errors; v1 had a ``reason`` instead."""

    type = "job_timed_out"
    version = 2
    upcasters = {1: _timed_out_v1_to_v2}
    json_text_fields = ("output",)

    error: ErrorData
    ended: bool
    retry_at: int | None = None
    output: str | None = None


class BulkJobData(EventData):
    """A job event that a bulk operation may append: ``operation`` is then that operation's id (its
    ``bulk_started`` event's id), recorded by the command, so the audit finds every job it touched."""

    operation: str | None = None


class JobCancelled(BulkJobData):
    type = "job_cancelled"
    json_text_fields = ("output",)

    output: str | None = None
    #: Set when the cancel was not the job's own: its queue was drained.
    reason: Literal["queue_drained"] | None = None


def _requeued_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """A v1 requeue kept the last run's fields and counted only automatic retries: ``keep_run``."""
    return {**data, "keep_run": True}


class JobRequeued(BulkJobData):
    """Back to its queue: by the scheduler after a retry delay (``retry``), or by a client (manual).
    v2, as Ocypod: the last run's ``started_at``, ``ended_at``, ``last_heartbeat`` and ``output``
    are cleared (the history keeps them) and every requeue counts in ``total_jobs_retried``.  A v1
    requeue cleared only ``ended_at`` and counted only automatic retries; it is upcast with
    ``keep_run`` so that it replays as it was applied."""

    type = "job_requeued"
    version = 2
    upcasters = {1: _requeued_v1_to_v2}

    retry: bool
    keep_run: bool = False


class JobReturned(EventData):
    """The worker running ``attempt`` handed the job back unfinished (it was stopping): the job is
    queued again at its priority, no retry counted, and that attempt can no longer act on it."""

    type = "job_returned"

    attempt: int
    worker: str | None = None


class JobEnded(EventData):
    """A job waiting to retry can no longer be retried (its queue was deleted); it ends as it is."""

    type = "job_ended"

    reason: Literal["queue_deleted"]


class JobResultAdded(FileRef, EventData):
    """The running attempt ``attempt`` stored a result: a reference to a blob, under ``name``.  A
    later result of the same name replaces it in the job's record (the ledger keeps both)."""

    type = "job_result_added"

    attempt: int


class JobExpired(EventData):
    type = "job_expired"


class JobDeleted(BulkJobData):
    type = "job_deleted"

    reason: Literal["queue_deleted"] | None = None


BulkAction = Literal["requeue", "cancel", "delete"]


class BulkStarted(EventData):
    """A bulk operation started: ``action`` on every job that matches the filter (``queue``,
    ``status``, ``tag``, ``error_kind``, ``since`` and ``until`` in ms, ``ids``; each left out when
    not given; ``status`` a list when several are: any of them).  The event's id is the operation's
    id; its entry's actor is who asked."""

    type = "bulk_started"

    action: BulkAction
    queue: str | None = None
    status: str | list[str] | None = None
    tag: str | None = None
    error_kind: str | None = None
    since: int | None = None
    until: int | None = None
    ids: list[int] | None = None


class BulkFinished(EventData):
    """The bulk operation ``operation`` went through every job its filter matched: its finishing run
    matched ``matched`` jobs and appended ``done`` events (a run before it, interrupted, may have
    done more: the record counts every one)."""

    type = "bulk_finished"

    operation: str
    matched: int
    done: int


class IdempotencyExpired(EventData):
    """The window of an Idempotency-Key is over: its lookup is forgotten (the entry's ``queue`` is
    the one the key's request created on).  ``key`` names the lookup: ``owner:key``, or the key
    alone for a key recorded before keys had owners."""

    type = "idempotency_expired"

    key: str


class TokenCreated(EventData):
    """An API token: its ``name``, the ``scopes`` it grants and the SHA-256 (hex) of its secret
    (``digest``; the secret itself is never recorded).  The entry has neither ``job`` nor ``queue``."""

    type = "token_created"

    name: str
    scopes: list[str]
    digest: str


class TokenRevoked(EventData):
    """The token ``name`` no longer authenticates anyone."""

    type = "token_revoked"

    name: str


LauncherType = Literal["@cron", "@interval", "@at", "@event"]


class LauncherEventData(EventData):
    """Events of a launcher: the entry has no ``job`` and its ``queue`` is the launcher's queue; the
    launcher's id is in the data."""

    launcher: int


class EventFilterData(BaseModel):
    """What an @event launcher matches: events of this type (and of this queue, if named)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    type: str
    queue: str | None = None


class LauncherDeclaration(LauncherEventData):
    """What a launcher is declared as: ``type`` and ``arguments`` say when it fires (a six-field cron
    expression, an interval, a time, or an event filter), in the time zone ``tz`` (a cron expression's;
    None: UTC), ``template`` (job options JSON text, durations in ms) and ``input`` (JSON text) what
    it creates.  ``next_at``: when it fires next, null for @event (and while paused).  A named
    launcher (``PUT /launcher/{name}``) has its ``name`` and ``declared``, the SHA-256 of its
    declaration in canonical JSON: the same declaration again changes nothing."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True, defer_build=True
    )
    json_text_fields = ("template", "input")

    launcher_type: LauncherType = Field(alias="type")
    arguments: str | EventFilterData
    template: str = "{}"
    input: str | None = None
    max_pending: int = 0
    debounce: int = 0
    next_at: int | None = None
    tz: str | None = None
    name: str | None = None
    declared: str | None = None


class LauncherCreated(LauncherDeclaration, IdempotencyData):
    """A new launcher (named, or made by ``POST /launcher`` with no name)."""

    type = "launcher_created"


class LauncherUpdated(LauncherDeclaration):
    """A named launcher declared again with changes: it takes the new declaration whole (its counters
    stay).  The entry's ``queue`` is its queue from now on."""

    type = "launcher_updated"


class LauncherDeleted(LauncherEventData):
    type = "launcher_deleted"


class LauncherPaused(LauncherEventData):
    """The launcher no longer fires (nor matches events) until resumed; its next firing is forgotten."""

    type = "launcher_paused"


class LauncherResumed(LauncherEventData):
    """The launcher fires again from ``next_at`` (null: on events only).  The firing times that passed
    while it was paused are neither fired nor counted; an @event launcher matches the events after this
    one."""

    type = "launcher_resumed"

    next_at: int | None = None


class LauncherFired(LauncherEventData):
    """The launcher created ``job`` for its due time ``due_at``; ``missed`` more due times had
    passed since and are coalesced into this firing; ``trigger`` is the matching event (@event), in
    the stream of partition ``source`` of a split ledger (None: the launcher's own).  ``manual``: fired
    by hand (``POST /launcher/{id}/fire``), at ``due_at``, its schedule left as it was."""

    type = "launcher_fired"

    due_at: int
    next_at: int | None = None
    job: int
    missed: int = 0
    trigger: str | None = None
    source: int | None = None
    manual: bool = False


class LauncherSkipped(LauncherEventData):
    """A due time passed without a job: ``max_pending`` jobs of the launcher had not ended, its queue
    was gone, or a live job held the template's ``unique_key``.  ``held``: a @cron or @interval
    launcher is now held back, due at ``due_at`` (its ``next_at`` stays there) until what held it is
    gone; the firing times that pass meanwhile append nothing, and :class:`LauncherReleased` counts
    them."""

    type = "launcher_skipped"

    due_at: int
    next_at: int | None = None
    reason: Literal["max_pending", "queue_missing", "unique_key"]
    trigger: str | None = None
    source: int | None = None
    held: bool = False


class LauncherReleased(LauncherEventData):
    """A held-back launcher (held since its due time ``due_at``) can create jobs again: ``skipped`` more
    firing times passed while it was held (each a skip, counted now), and it fires next at ``next_at``."""

    type = "launcher_released"

    due_at: int
    next_at: int | None = None
    skipped: int = 0


class LauncherTriggered(LauncherEventData):
    """A debounced @event launcher matched the event ``trigger`` (of partition ``source``'s stream,
    None: its own): it fires at ``due_at`` unless another match moves that later first."""

    type = "launcher_triggered"

    trigger: str
    due_at: int
    source: int | None = None


EVENT_TYPES: dict[str, type[EventData]] = {
    cls.type: cls
    for cls in (
        QueueCreated,
        QueueUpdated,
        QueueDeleted,
        QueuePaused,
        QueueResumed,
        JobCreated,
        JobReleased,
        JobStarted,
        JobHeartbeat,
        JobProgressed,
        JobOutputSet,
        JobCompleted,
        JobFailed,
        JobTimedOut,
        JobCancelled,
        JobRequeued,
        JobReturned,
        JobEnded,
        JobResultAdded,
        JobExpired,
        JobDeleted,
        BulkStarted,
        BulkFinished,
        LauncherCreated,
        LauncherUpdated,
        LauncherDeleted,
        LauncherPaused,
        LauncherResumed,
        LauncherFired,
        LauncherSkipped,
        LauncherReleased,
        LauncherTriggered,
        IdempotencyExpired,
        TokenCreated,
        TokenRevoked,
    )
}


def upcast(type_: str, version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Raise ``data`` written at ``version`` of its type to the current version."""
    cls = EVENT_TYPES[type_]
    while version < cls.version:
        data = cls.upcasters[version](data)
        version += 1
    return data


@dataclass(frozen=True)
class Event:
    """One decoded stream entry, its data upcast to the current model."""

    id: str
    type: str
    at: int
    job: int | None
    queue: str | None
    data: EventData
    actor: str = LOCAL

    def item(self) -> dict[str, Any]:
        """The API's event item ``{id, type, at, queue, job, actor, data}``, user JSON decoded."""
        data = self.data.model_dump(exclude_none=True)
        for name in self.data.json_text_fields:
            if name in data:
                data[name] = json.loads(data[name])
        return {
            "id": self.id,
            "type": self.type,
            "at": format_time(self.at),
            "queue": self.queue,
            "job": self.job,
            "actor": self.actor,
            "data": data,
        }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def decode_entry(entry_id: Any, fields: dict[Any, Any]) -> Event:
    """A raw XRANGE entry (bytes or str) -> :class:`Event`, upcasting an older ``v``; an entry
    without an ``actor`` (written before the field existed) reads as :data:`LOCAL`."""
    f = {_text(k): _text(v) for k, v in fields.items()}
    type_ = f["type"]
    raw = json.loads(f.get("data") or "{}")
    data = EVENT_TYPES[type_].model_validate(upcast(type_, int(f.get("v", "1")), raw), context=LEDGER_UNITS)
    job = f.get("job")
    return Event(
        id=_text(entry_id),
        type=type_,
        at=int(f["at"]),
        job=int(job) if job else None,
        queue=f.get("queue") or None,
        data=data,
        actor=f.get("actor") or LOCAL,
    )


def lua_versions(types: Iterable[str] | None = None, ones: bool = True) -> str:
    """The Lua table of current versions (of the types named; all by default), so scripts stamp ``v``
    from the same models.  Without ``ones``, only the versions other than 1, for a script that reads
    a type's as ``V[kind] or 1`` (a command: it builds the table at every call, and most types are
    at 1); replay's scripts keep every type, as they tell the types they know by it."""
    named = EVENT_TYPES if types is None else set(types)
    pairs = ", ".join(
        f"{name} = {cls.version}"
        for name, cls in EVENT_TYPES.items()
        if name in named and (ones or cls.version != 1)
    )
    return "local V = {" + pairs + "}\n"
