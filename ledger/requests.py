"""What commands accept: queue settings and job options, validated with pydantic.

The HTTP bodies are these models, so a bad field is refused before any script runs (no event is
appended).  Durations arrive as human strings or seconds and are held as milliseconds; times arrive
as RFC 3339 text and are held as milliseconds since the epoch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from jobledger.contract.files import MAX_FILES, MAX_SIZE, duplicate_name
from jobledger.ledger.durations import parse_ms, parse_time
from jobledger.ledger.files import FileRef, FileSpec
from jobledger.ledger.keys import valid_queue_name
from jobledger.ledger.option_kinds import DURATION, TIME, shown

#: How the ledger's events hold durations; :func:`jobledger.ledger.events.decode_entry` validates
#: their data with this context, so an event's settings are the request's models, read in milliseconds.
LEDGER_UNITS = {"durations": "ms"}


def _duration(value: Any, info: ValidationInfo) -> Any:
    """A duration as a request gives it (text such as "30s", or a number of seconds), or, in the
    :data:`LEDGER_UNITS` context, as an event holds it: already milliseconds."""
    if info.context == LEDGER_UNITS:
        return value
    return parse_ms(value)


Duration = Annotated[int, BeforeValidator(_duration), DURATION]
#: At most 2**31 - 1: exact through Lua's 14-digit number encoding, so it reads back as set.
Count = Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]


def checked_queue_name(name: str) -> str:
    """``name`` if it is a valid queue name, else ValueError saying what one is."""
    if not valid_queue_name(name):
        raise ValueError(f"invalid queue name {name!r}: use 1-255 characters of A-Z a-z 0-9 _ - .")
    return name


QueueName = Annotated[StrictStr, AfterValidator(checked_queue_name)]
#: The longest text of each kind that lands in an event (docs/http-api.md has the table), and how
#: many of a kind one job or queue may list: each tag is a set of its own, each kind a retry rule.
MAX_TAG = 255
MAX_KEY = 255
MAX_ERROR_KIND = 100
MAX_WORKER_ID = 255
MAX_TAGS = 100
MAX_ERROR_KINDS = 100
#: Text a terminal or a log viewer would act on: no control character (C0, DEL, C1).
NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"
Tag = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG)]
Key = Annotated[StrictStr, Field(min_length=1, max_length=MAX_KEY)]
Priority = Annotated[StrictInt, Field(ge=0, le=100)]
ErrorKind = Annotated[StrictStr, Field(min_length=1, max_length=MAX_ERROR_KIND)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS)]
ErrorKinds = Annotated[list[ErrorKind], Field(max_length=MAX_ERROR_KINDS)]
#: The id a worker gives when it fetches, recorded on the jobs it starts.
WorkerId = Annotated[StrictStr, Field(min_length=1, max_length=MAX_WORKER_ID, pattern=NO_CONTROL)]
_WORKER_ID: TypeAdapter[str] = TypeAdapter(WorkerId)


def checked_worker_id(worker: str) -> str:
    """``worker`` if it can be a worker's id, else ValueError saying what one is."""
    try:
        return _WORKER_ID.validate_python(worker)
    except ValidationError:
        raise ValueError(
            f"a worker id is 1 to {MAX_WORKER_ID} characters, none of them a control character "
            f"(this one has {len(worker)})"
        ) from None


#: A number of bytes (a limit on files), exact through Lua's number encoding.
ByteCount = Annotated[StrictInt, Field(ge=0, le=MAX_SIZE)]
GIB = 2**30


def _time(value: Any) -> int:
    if not isinstance(value, str):
        raise ValueError("a time is RFC 3339 text, e.g. 2026-11-20T18:52:42Z")
    try:
        return parse_time(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an RFC 3339 time, e.g. 2026-11-20T18:52:42Z") from None


Time = Annotated[int, BeforeValidator(_time), TIME]
#: Ocypod's six statuses and jobledger's scheduled
Status = Literal["queued", "running", "failed", "completed", "cancelled", "timed_out", "scheduled"]
JOB_STATUSES: tuple[Status, ...] = get_args(Status)

FIVE_MINUTES = 300_000
MAX_MESSAGE = 1000
MAX_TRACEBACK = 8192


class Backoff(BaseModel):
    """Exponential backoff between retries: ``min(base * factor ** retries_attempted, max)``."""

    # defer_build: validators built by the first validation, not by every process's start
    model_config = ConfigDict(extra="forbid", defer_build=True)

    base: Duration = Field(description="The first retry's delay.")
    factor: Annotated[float, Field(ge=1, le=100, strict=False)] = Field(
        default=2.0, description="Each retry waits this many times longer than the one before."
    )
    max: Duration = Field(default=3_600_000, description="No retry waits longer than this.")


class JobOptions(BaseModel):
    """A job's creation body.  Settings left out come from the queue, inside the create script.

    Each field is the one declaration of its option: its name, type, bounds and description are
    what the OpenAPI document, the command line's ``submit`` and the Lua scripts' lists of names
    take (see :mod:`jobledger.ledger.option_lists`); a queue setting of the same name gives its
    default."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input: Any = Field(default=None, description="The job's input: any JSON, handed to the worker as given.")
    tags: Tags | None = Field(default=None, description="Tags to find the job by.")
    timeout: Duration | None = Field(default=None, description="Run at most this long (0s: no limit).")
    heartbeat_timeout: Duration | None = Field(
        default=None, description="Time out after this long without a heartbeat (0s: off)."
    )
    expires_after: Duration | None = Field(default=None, description="Keep the ended job this long.")
    retries: Count | None = Field(default=None, description="Retries after a failure or a timeout.")
    retry_delays: list[Duration] | None = Field(
        default=None, description="The delay before each retry (the last one for those after it)."
    )
    retry_backoff: Backoff | None = Field(
        default=None, description="Instead of retry_delays: delays that grow exponentially."
    )
    priority: Priority | None = Field(
        default=None, description="0-100, higher first; first in first out within one."
    )
    run_at: Time | None = Field(default=None, description="Start no sooner than this time (RFC 3339).")
    delay: Duration | None = Field(default=None, description="Start no sooner than this long from now.")
    unique_key: Key | None = Field(
        default=None,
        description="At most one live job of the queue holds it: a create answers that job's id.",
    )
    quota_key: Key | None = Field(default=None, description="What the queue's max_running_per_key counts.")
    max_queued_time: Duration | None = Field(
        default=None, description="Time out when queued longer than this (0s: no limit)."
    )
    retry_on: ErrorKinds | None = Field(default=None, description="Retry only errors of these kinds.")
    no_retry_on: ErrorKinds | None = Field(default=None, description="Never retry errors of these kinds.")
    files: Annotated[list[FileSpec], Field(max_length=MAX_FILES)] | None = Field(
        default=None,
        description="Files stored as blobs already, by name and SHA-256 (a multipart create stores them).",
    )

    @model_validator(mode="after")
    def _one_start(self) -> JobOptions:
        if self.run_at is not None and self.delay is not None:
            raise ValueError("give run_at or delay, not both")
        if self.files:
            clash = duplicate_name(f.name for f in self.files)
            if clash is not None:
                raise ValueError(clash)
        return self

    def with_files(self, files: list[FileRef]) -> JobOptions:
        """These options with ``files`` as the blob store found them (sizes and media types known)."""
        specs = [FileSpec(**ref.model_dump()) for ref in files]
        return self.model_copy(update={"files": specs or None})

    def files_resolved(self) -> bool:
        """Whether every file names its size and media type, as the ledger records them."""
        return all(f.size is not None and f.media_type is not None for f in self.files or ())

    def options_json(self) -> str:
        """The settings the request gave (not input), for the create script."""
        return json.dumps(self.model_dump(exclude={"input"}, exclude_none=True), separators=(",", ":"))

    def input_text(self) -> str:
        return "" if self.input is None else json_text(self.input)


def _default(option: str) -> str:
    """The description of a queue setting that is a job option's default."""
    return "The default of jobs that leave it out: " + str(JobOptions.model_fields[option].description)


class QueueSettings(BaseModel):
    """Ocypod's queue settings and jobledger's; a field left out takes its default (as on PUT).
    A setting named as a job option is that option's default, taken by the create script."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    timeout: Duration = Field(default=FIVE_MINUTES, description=_default("timeout"))
    heartbeat_timeout: Duration = Field(default=0, description=_default("heartbeat_timeout"))
    expires_after: Duration = Field(default=FIVE_MINUTES, description=_default("expires_after"))
    retries: Count = Field(default=0, description=_default("retries"))
    retry_delays: list[Duration] = Field(default=[], description=_default("retry_delays"))
    retry_backoff: Backoff | None = Field(default=None, description=_default("retry_backoff"))
    priority: Priority = Field(default=0, description=_default("priority"))
    max_queued_time: Duration = Field(default=0, description=_default("max_queued_time"))
    max_running: Count = Field(default=0, description="Most jobs of the queue running at once (0: no limit).")
    max_running_per_key: Count = Field(
        default=0, description="Most running jobs of one quota_key at once (0: no limit)."
    )
    retry_on: ErrorKinds = Field(default=[], description=_default("retry_on"))
    no_retry_on: ErrorKinds = Field(default=[], description=_default("no_retry_on"))
    paused: StrictBool = Field(default=False, description="Take jobs but hand none out until resumed.")
    max_file_size: ByteCount = Field(
        default=GIB, description="The largest file a job may have, in bytes (0: no limit)."
    )
    max_job_bytes: ByteCount = Field(
        default=4 * GIB, description="The most bytes all of a job's files may hold together (0: no limit)."
    )

    def to_json(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True), separators=(",", ":"))

    def view(self) -> dict[str, Any]:
        """As the API shows it: durations as compact strings."""
        return shown(QueueSettings, self.model_dump())


def _traceback(value: str) -> str:
    if len(value.encode()) > MAX_TRACEBACK:
        raise ValueError(f"traceback can be at most {MAX_TRACEBACK} bytes (keep its end)")
    return value


class ErrorReport(BaseModel):
    """An error a worker reports when it fails a job: its kind decides retry; ``traceback`` (UTF-8,
    at most 8 KiB) is kept with it in the job's errors."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: ErrorKind = "error"
    message: Annotated[StrictStr, Field(max_length=MAX_MESSAGE)] = ""
    traceback: Annotated[StrictStr, AfterValidator(_traceback)] | None = None


def _error(value: Any) -> Any:
    return {"kind": "error", "message": value} if isinstance(value, str) else value


class JobUpdate(BaseModel):
    """PATCH /job/{id}: status, output, progress, message, error; only fields present change anything."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    #: any status parses; the transition table (in the update script) refuses those it does not allow
    status: Status | None = None
    output: Any = None
    attempt: Annotated[StrictInt, Field(ge=1)] | None = None
    progress: Annotated[StrictInt, Field(ge=0, le=100)] | None = None
    message: Annotated[StrictStr, Field(max_length=MAX_MESSAGE)] | None = None
    error: Annotated[ErrorReport, BeforeValidator(_error)] | None = None

    @model_validator(mode="after")
    def _error_needs_failed(self) -> JobUpdate:
        if self.error is not None and self.status not in ("failed", "timed_out"):
            raise ValueError("error goes with status 'failed' or 'timed_out'")
        return self

    def body(self) -> dict[str, Any]:
        """As a ``PATCH /job/{id}`` body: the fields given (an output of None is no output)."""
        return self.model_dump(exclude_none=True)

    def output_text(self) -> str:
        """The output to set, as JSON text; '' for none.  ``"output": null`` sets nothing, as in
        Ocypod (its clients send the null of an unset field); ``PUT /job/{id}/output`` sets null."""
        return "" if self.output is None else json_text(self.output)

    def progress_json(self) -> str:
        """``{progress, message}`` as given, or '' when neither is."""
        given = {k: getattr(self, k) for k in ("progress", "message") if getattr(self, k) is not None}
        return json.dumps(given, separators=(",", ":")) if given else ""

    def error_json(self) -> str:
        return self.error.model_dump_json(exclude_none=True) if self.error else ""


def json_text(value: Any) -> str:
    """Compact JSON text of a user value."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field's annotation holds (through ``| None`` and ``Annotated``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def known_part(
    model: type[BaseModel], data: Mapping[str, Any], where: str = ""
) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the keys ``model`` has no field for (inside nested models too), and those
    keys, dotted from the top (``retry_backoff.step``).  Ocypod ignores keys it does not know; so
    does jobledger, naming them (see ``jobledger.server.inputs.read_model``)."""
    known: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            unknown.append(where + key)
            continue
        nested = _model_in(field.annotation)
        if nested is not None and isinstance(value, Mapping):
            value, deeper = known_part(nested, value, f"{where}{key}.")
            unknown += deeper
        known[key] = value
    return known, unknown
