"""What ``/openapi.json`` says about each endpoint: summary, body, query parameters, answers.

One :class:`Operation` per route, named by the ``operation`` of its record in
:data:`jobledger.server.routes.ROUTES` (and loaded with the document, not at a server's start).
Statuses every endpoint of a kind shares (400 for a body or a queue name, 413 for a body, 404 for a
job id, 503 when Redis is unreachable) are added by ``jobledger.server.openapi``, and the
Idempotency-Key where the record says so; these entries list the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from jobledger.contract.traceparent import PATTERN as TRACEPARENT
from jobledger.ledger.bulk import BulkRequest
from jobledger.ledger.events import ACTOR_PATTERN, EVENT_TYPES
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.option_kinds import named
from jobledger.ledger.requests import JOB_STATUSES, JobOptions, JobUpdate, QueueSettings
from jobledger.projections.views import JOB_FIELDS
from jobledger.server.batch_handlers import JobBatch

REF = "#/components/schemas/{model}"

JSON = dict[str, Any]


def ref(name: str) -> JSON:
    return {"$ref": REF.format(model=name)}


def array(items: JSON, **limits: int) -> JSON:
    return {"type": "array", "items": items, **limits}


QUEUE_NAME: JSON = {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,255}$"}
JOB_ID: JSON = {"type": "integer", "minimum": 1}
#: Who caused an event: a token's name, local, scheduler or launcher:ID.
ACTOR: JSON = {"type": "string", "pattern": ACTOR_PATTERN, "examples": ["local", "scheduler", "launcher:3"]}
TAG: JSON = {"type": "string", "minLength": 1, "maxLength": 255}
EVENT_ID: JSON = {"type": "string", "pattern": "^[0-9]+(-[0-9]+)?$", "examples": ["1795322898701-0"]}
#: A position in the event feed: an event id with one partition, an opaque token with several.
EVENT_CURSOR: JSON = {"type": "string", "pattern": "^([0-9]+(-[0-9]+)?|p[A-Za-z0-9_-]+)$",
                      "examples": ["1795322898701-0"]}  # fmt: skip
_FIELD = "|".join(JOB_FIELDS)
FIELD_LIST: JSON = {"type": "string", "pattern": f"^({_FIELD})(,({_FIELD}))*$", "examples": ["status,output"]}
TIME_OR_NULL: JSON = {"type": ["string", "null"], "format": "date-time"}
TIME: JSON = {"type": "string", "format": "date-time"}
DURATION_TEXT: JSON = {"type": "string", "examples": ["5m", "1h15m5s", "0s"]}


@dataclass(frozen=True)
class Param:
    schema: JSON
    description: str


#: Path parameters by name; any other is a plain string.
PATH_PARAMS: dict[str, Param] = {
    "queue": Param(QUEUE_NAME, "Queue name: 1-255 characters of A-Z a-z 0-9 _ - ."),
    "job_id": Param(JOB_ID, "Job id (an id that is not a positive integer names no job: 404)."),
    "tag": Param(TAG, "A job tag."),
    "name": Param(
        {"type": "string", "minLength": 1, "maxLength": 255},
        "A file's name: one path segment (no / or \\, no control character, not . or ..).",
    ),
    "launcher_id": Param(JOB_ID, "Launcher id (one that is not a positive integer names no launcher: 404)."),
    "operation": Param(EVENT_ID, "A bulk operation's id (the id of its bulk_started event)."),
}

#: Query parameters by name, for the endpoints that take them.
QUERY_PARAMS: dict[str, Param] = {
    "fields": Param(
        FIELD_LIST,
        "Comma-separated job fields to return (a fetch adds only heartbeat_timeout to each job).",
    ),
    "attempt": Param(JOB_ID, "The attempt this update acts for (fencing: 409 if it is no longer running)."),
    "count": Param({"type": "integer", "minimum": 1, "maximum": 1000}, "Fetch up to this many (a list)."),
    "worker": Param({"type": "string"}, "The fetching worker's id, recorded on the job."),
    "wait": Param(
        {"type": "string", "examples": ["30s", "2.5"]},
        "Wait up to this long (a duration or seconds, at most 5m): a fetch long-polls for a job instead "
        "of 204 at once; a bulk operation is waited for before 202 (default 10s).",
    ),
    "after": Param(
        {**EVENT_CURSOR, "pattern": "^([0-9]+(-[0-9]+)?|p[A-Za-z0-9_-]+)?$"},
        "Events after this position (exclusive): the previous page's next, or an event id; empty or "
        "absent: from the start.",
    ),
    "limit": Param({"type": "integer", "minimum": 1, "maximum": 1000}, "Page size (default 100)."),
    "type": Param({"type": "string", "enum": list(EVENT_TYPES)}, "Only events of this type."),
    "queue": Param(
        QUEUE_NAME, "Only events of this queue (PUT /blob: the queue whose limits and produce scope apply)."
    ),
    "sha256": Param({"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}, "The SHA-256 the body must hash to."),
    "job": Param(JOB_ID, "Only events of this job."),
    "actor": Param(
        ACTOR,
        "Only events this actor caused: a token's name, local, scheduler or launcher:ID.",
    ),
    "status": Param({"type": "string", "enum": list(JOB_STATUSES)}, "Only jobs with this status."),
    "tag": Param({"type": "string"}, "Only jobs with this tag."),
    "cursor": Param({"type": "string", "pattern": "^[0-9]+$"}, "The previous page's next."),
    "operation": Param(EVENT_ID, "Only the events of this bulk operation: its start, its jobs', its end."),
    "search": Param(
        {"type": "string", "minLength": 1, "maxLength": 255},
        "Only jobs whose id, a tag, or the text of their input, output or errors holds this text (a "
        "bounded scan: each page reads at most 2,000 jobs; next continues it).",
    ),
    "since": Param(TIME, "With search: only jobs created at or after this time."),
    "until": Param(TIME, "With search: only jobs created before this time."),
    "partition": Param(
        {"type": "integer", "minimum": 0},
        "The partition whose log is meant: required on a ledger split into partitions.",
    ),
    "event": Param({"type": "string", "pattern": "^[0-9]+-[0-9]+$"}, "An event id (MS-SEQ)."),
    "size": Param({"type": "integer", "minimum": 1}, "A published checkpoint's size; default the latest's."),
    "from": Param({"type": "integer", "minimum": 1}, "The older checkpoint's size (required)."),
    "to": Param({"type": "integer", "minimum": 1}, "The newer checkpoint's size; default the latest's."),
}


@dataclass(frozen=True)
class Body:
    """A request body: a pydantic model (``many``: a list of them) or a plain JSON schema."""

    model: type[BaseModel] | None = None
    schema: JSON | None = None
    required: bool = True
    many: tuple[int, int] | None = None  # (minItems, maxItems) of a list of ``model``
    also: dict[str, JSON] = field(default_factory=dict)  # other media types it may be, and their schemas
    media_type: str = "application/json"


@dataclass(frozen=True)
class Reply:
    description: str
    schema: JSON | None = None  # JSON body of a success; errors always carry the Error schema
    media_type: str = "application/json"
    location: bool = False  # a ``location`` header
    also: dict[str, JSON] = field(default_factory=dict)  # other media types it may be, and their schemas


@dataclass(frozen=True)
class Operation:
    summary: str
    responses: dict[int, Reply]
    body: Body | None = None
    query: tuple[str, ...] = ()
    uses_redis: bool = True  # 503 when Redis is unreachable
    description: str | None = None
    headers: dict[str, Param] = field(default_factory=dict)


#: What a route whose record is ``idempotent`` takes, and answers when the key was used before.
IDEMPOTENT = {
    "Idempotency-Key": Param(
        {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$"},
        "Sent again with the same request, answers the first answer without creating again; "
        "with another request, 422.",
    )
}
MISMATCH = {422: Reply("The Idempotency-Key was first used with another request.")}
TRACEPARENT_TEXT: JSON = {"type": "string", "pattern": TRACEPARENT}
#: What a create takes to record the trace it was sent in.
TRACED = {
    "traceparent": Param(
        {"type": "string"},
        "W3C Trace Context: recorded in the job (a version-00 traceparent; any other value is "
        "ignored) and handed out with it, so that the worker's span is a child of the sender's.",
    )
}

NO_CONTENT = Reply("Done; no body.")
BYTES: JSON = {"type": "string", "format": "binary"}
OCTETS = "application/octet-stream"
SHA256: JSON = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
FILE_REF: JSON = {
    "type": "object",
    "required": ["name", "sha256", "size", "media_type"],
    "properties": {"name": {"type": "string"}, "sha256": SHA256, "size": {"type": "integer", "minimum": 0},
                   "media_type": {"type": "string"}},
}  # fmt: skip
RESULT: JSON = {
    "type": "object",
    "required": [*FILE_REF["required"], "attempt"],
    "properties": {**FILE_REF["properties"], "attempt": {"type": "integer", "minimum": 1}},
}
DIGESTS = {
    name: Param({"type": "string", "examples": ["sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"]},
                "The SHA-256 the body must have (else 400, nothing recorded).")
    for name in ("Repr-Digest", "Content-Digest")
}  # fmt: skip
NO_QUEUE = {404: Reply("No such queue.")}
NOT_RUNNING = {409: Reply("The job is not in a state that allows it, or the attempt named is not running.")}

TIME_FIELDS = ("created_at", "started_at", "ended_at", "last_heartbeat", "run_at", "retry_at")
_JOB_FIELD_SCHEMAS: dict[str, JSON] = {
    "id": JOB_ID, "queue": {"type": "string"}, "status": {"type": "string", "enum": list(JOB_STATUSES)},
    "tags": {"type": ["array", "null"], "items": {"type": "string"}},
    **{t: TIME_OR_NULL for t in TIME_FIELDS},
    "input": {}, "output": {},
    **{d: DURATION_TEXT for d in named(JobOptions, "duration")},
    **{c: {"type": "integer"} for c in ("retries_attempted", "attempt", *named(JobOptions, "number"))},
    "retry_delays": {"type": ["array", "null"], "items": DURATION_TEXT}, "ended": {"type": "boolean"},
    "progress": {"type": ["integer", "null"]},
    "errors": array({"type": "object", "properties": {
        "at": TIME_OR_NULL, "attempt": {"type": "integer"}, "kind": {"type": "string"},
        "message": {"type": "string"}}}),
    "retry_on": array({"type": "string"}), "no_retry_on": array({"type": "string"}),
}  # fmt: skip


def job_schema(fields: tuple[str, ...]) -> JSON:
    """A job as ``GET /job/{id}`` shows it: any of ``fields`` (all, or those asked for)."""
    return {"type": "object", "properties": {f: _JOB_FIELD_SCHEMAS.get(f, {}) for f in fields}}


def event_item() -> JSON:
    return {
        "type": "object",
        "required": ["id", "type", "at", "actor", "data"],
        "properties": {
            "id": EVENT_ID, "type": {"type": "string", "enum": list(EVENT_TYPES)},
            "at": {"type": "string", "format": "date-time"},
            "queue": {"type": ["string", "null"]}, "job": {"type": ["integer", "null"]},
            "actor": ACTOR, "data": {"type": "object"},
        },
    }  # fmt: skip


def launcher_schema() -> JSON:
    """A launcher as ``GET /launcher/{id}`` shows it."""
    count = {"type": "integer", "minimum": 0}
    return {
        "type": "object",
        "required": ["id", "type", "arguments", "queue", "template"],
        "properties": {
            "id": JOB_ID, "type": {"type": "string", "enum": ["@cron", "@interval", "@at", "@event"]},
            "arguments": {"description": "cron text, interval, RFC 3339 time, or an event filter object"},
            "queue": QUEUE_NAME, "template": {"type": "object"}, "max_pending": count,
            "debounce": DURATION_TEXT, "created_at": TIME_OR_NULL, "next_at": TIME_OR_NULL,
            "fired": count, "skipped": count, "pending": count, "last_fired_at": TIME_OR_NULL,
            "last_job": {"type": ["integer", "null"]},
        },
    }  # fmt: skip


def response_schemas(job_fields: tuple[str, ...]) -> dict[str, JSON]:
    """The components that answers refer to (request bodies come from the pydantic models)."""
    next_event = {**EVENT_CURSOR, "type": ["string", "null"]}
    fetched = {"type": "object", "required": ["id", "input", "attempt"],
               "properties": {"id": JOB_ID, "input": {}, "attempt": JOB_ID,
                              "files": array(FILE_REF), "traceparent": TRACEPARENT_TEXT,
                              "heartbeat_timeout": DURATION_TEXT}}  # fmt: skip
    counts = {"type": "object", "additionalProperties": {"type": "integer"}}
    refused = {
        "type": "object",
        "required": ["status", "error"],
        "properties": {"status": {"type": "integer"}, "error": {"type": "string"}},
    }
    updated = {
        "type": "object",
        "required": ["id", "status"],
        "properties": {
            "id": JOB_ID,
            "status": {"type": "integer"},
            "error": {"type": "string"},
        },
    }
    return {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
        "Job": job_schema(job_fields),
        "Fetched": fetched,
        "JobIds": {"type": "object", "additionalProperties": array(JOB_ID)},
        "Batched": {"type": "object", "required": ["updates"], "properties": {
            "updates": array(updated), "jobs": array(ref("Fetched")), "fetch_error": refused}},
        "JobPage": {"type": "object", "required": ["jobs", "next"],
                    "properties": {"jobs": array(ref("Job")), "next": {"type": ["integer", "null"]}}},
        "Event": event_item(),
        "BulkAnswer": {"type": "object", "required": ["operation", "matched", "done"], "properties": {
            "operation": {**EVENT_ID, "type": ["string", "null"]}, "matched": {"type": "integer"},
            "done": {"type": "integer"}, "finished": {"type": "boolean"}}},
        "BulkOperation": {"type": "object", "properties": {
            "operation": EVENT_ID, "action": {"type": "string", "enum": ["requeue", "cancel", "delete"]},
            "filter": {"type": "object"}, "started_at": {"type": "string", "format": "date-time"},
            "finished_at": TIME_OR_NULL, "done": {"type": "integer"},
            "matched": {"type": ["integer", "null"]}, "running": {"type": "boolean"}}},
        "EventPage": {"type": "object", "required": ["events", "next"],
                      "properties": {"events": array(ref("Event")), "next": next_event}},
        "Info": {"type": "object", "required": ["queues", "statistics"], "properties": {
            "queues": {"type": "object", "additionalProperties": counts}, "statistics": counts}},
        "Launcher": launcher_schema(),
        "Health": {"type": "object", "required": ["status"], "properties": {
            "status": {"type": "string", "enum": ["healthy", "unhealthy"]}, "error": {"type": "string"}}},
    }  # fmt: skip


BINARY: JSON = {"type": "string", "format": "binary"}
BLOB: JSON = {"type": "object", "required": ["sha256", "size"],
              "properties": {"sha256": {"type": "string"}, "size": {"type": "integer"}}}  # fmt: skip
DIGESTS = {
    name: Param({"type": "string", "examples": ["sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"]},
                f"{name}: the SHA-256 the body must hash to.")
    for name in ("Repr-Digest", "Content-Digest")
}  # fmt: skip
JOB_FORM: JSON = {
    "type": "object",
    "properties": {"job": {"type": "string", "description": "The JSON job body (optional)."}},
    "additionalProperties": {
        **BINARY,
        "description": "A file, named by its filename (else the part's name).",
    },
}
ORCHESTRATOR_FORM: JSON = {
    "type": "object", "required": ["user_id", "service"],
    "properties": {"user_id": {"type": "string", "pattern": "^-?[0-9]+$"}, "service": QUEUE_NAME},
    "additionalProperties": BINARY,
}  # fmt: skip
ORCHESTRATOR_STATE: JSON = {
    "type": "object", "required": ["id", "status", "message"],
    "properties": {"id": {"type": "integer"}, "message": {"type": "string"}, "status": {
        "type": "string", "enum": ["Queued", "Submitted", "Completed", "Failed", "Killed", "Unknown"]}},
}  # fmt: skip
MANIFEST_ENTRY: JSON = {
    "type": "object",
    "required": ["name", "sha256", "size", "media_type", "attempt", "at", "actor", "url"],
    "properties": {
        "name": {"type": "string"}, "sha256": {"type": "string"}, "size": {"type": "integer"},
        "media_type": {"type": "string"}, "attempt": {"type": "integer"},
        "at": {"type": "string", "format": "date-time"}, "actor": {"type": ["string", "null"]},
        "url": {"type": "string"},
    },
}  # fmt: skip
RESULTS: JSON = {
    "type": "object",
    "required": ["id", "status", "results"],
    "properties": {
        "id": JOB_ID,
        "status": {"type": "string", "enum": list(JOB_STATUSES)},
        "results": array(MANIFEST_ENTRY),
    },
}

LAUNCHER_ID: JSON = {"type": "object", "required": ["id"], "properties": {"id": JOB_ID}}

# The operations, in the order of the routes' table.

LIST_QUEUES = Operation("List queue names", {200: Reply("Queue names.", array({"type": "string"}))})

PUT_QUEUE = Operation(
    "Create a queue or replace its settings",
    {201: Reply("Created.", location=True), 204: Reply("Settings replaced.", location=True)},
    body=Body(QueueSettings, required=False),
    description="A field left out takes its default, as in Ocypod.",
)

GET_QUEUE = Operation(
    "A queue's settings",
    {200: Reply("Settings, durations as compact strings.", ref("QueueSettings")), **NO_QUEUE},
)

DELETE_QUEUE = Operation(
    "Delete a queue and its queued jobs",
    {204: NO_CONTENT, **NO_QUEUE},
    description="Running and ended jobs stay.",
)

QUEUE_SIZE = Operation("Number of queued jobs", {200: Reply("Queued jobs.", {"type": "integer"}), **NO_QUEUE})

QUEUE_JOB_IDS = Operation(
    "Job ids by status",
    {
        200: Reply("{status: [ids]} for every status.", ref("JobIds")),
        404: Reply("No such queue, and no job of it is left."),
    },
    description="A deleted queue answers with the jobs it left behind (running, failed, ended...).",
)

CREATE_JOB = Operation(
    "Create a job",
    {
        201: Reply("Created: the new id.", JOB_ID, location=True),
        200: Reply("A live job of the queue holds the unique_key: its id.", JOB_ID, location=True),
        **NO_QUEUE,
    },
    body=Body(JobOptions, required=False, also={"multipart/form-data": JOB_FORM}),
    headers=TRACED,
    description="Also multipart/form-data: a part 'job' (this JSON body) and the job's files, "
    "stored before the job is created; 413 when a file is over the queue's max_file_size or "
    "the job's files over its max_job_bytes.  Files named by sha256 must be stored (PUT /blob) "
    "and, with auth on, held by a queue the token may read; else 400, as for a blob not stored.",
)

PUT_BLOB = Operation(
    "Store a blob (a file for jobs to name by its SHA-256)",
    {
        201: Reply("Stored (whether or not the store held these bytes already).", BLOB),
        404: Reply("No such queue (?queue)."),
        413: Reply("Over the queue's max_file_size; nothing stored."),
    },
    body=Body(schema=BINARY, media_type="application/octet-stream"),
    query=("queue", "sha256"),
    headers=DIGESTS,
    description="The body streams into the store; a digest given (?sha256, Repr-Digest or "
    "Content-Digest) that the bytes do not hash to is a 400, with nothing stored.",
)

UPLOAD = Operation(
    "Create a job from the job-orchestrator's upload form",
    {
        201: Reply("Created: the job-orchestrator's answer.", ORCHESTRATOR_STATE),
        413: Reply("A file over the service queue's limits."),
    },
    body=Body(schema=ORCHESTRATOR_FORM, media_type="multipart/form-data"),
    description="Form fields user_id (a number) and service (the queue); every part with a "
    "filename is a file of the job.  Errors carry the orchestrator's message beside error.",
)

DOWNLOAD = Operation(
    "The job-orchestrator's download: the job's state, or once it completed, the zip of its results",
    {200: Reply("The state until the job completed.", ORCHESTRATOR_STATE, also={"application/zip": BINARY})},
)

FETCH_JOB = Operation(
    "Fetch the next job(s), now running",
    {
        200: Reply(
            "The job, or with count a list of up to count jobs.",
            {"oneOf": [ref("Fetched"), array(ref("Fetched"))]},
        ),
        204: Reply("No job to hand out."),
        **NO_QUEUE,
    },
    query=("count", "worker", "wait", "fields"),
)

CREATE_JOBS = Operation(
    "Create many jobs in one request",
    {201: Reply("Their ids, in order.", array(JOB_ID)), **NO_QUEUE},
    body=Body(JobOptions, many=(1, 10_000)),
    headers=TRACED,
)

LIST_JOBS = Operation(
    "Job summaries of a queue, paged",
    {200: Reply("A page; next goes back as cursor.", ref("JobPage")), **NO_QUEUE},
    query=("status", "tag", "limit", "cursor", "search", "since", "until"),
)

PAUSE_QUEUE = Operation("Pause a queue", {204: NO_CONTENT, **NO_QUEUE})

RESUME_QUEUE = Operation("Resume a queue", {204: NO_CONTENT, **NO_QUEUE})

GET_JOB = Operation(
    "A job's fields", {200: Reply("All fields, or those named.", ref("Job"))}, query=("fields",)
)

GET_STATUS = Operation(
    "A job's status",
    {200: Reply("The status, a JSON string.", {"type": "string", "enum": list(JOB_STATUSES)})},
)

UPDATE_JOB = Operation(
    "Update a job: status, output, progress, message, error",
    {204: NO_CONTENT, **NOT_RUNNING},
    body=Body(JobUpdate),
    query=("attempt",),
)

UPDATE_JOBS = Operation(
    "Update many jobs, and fetch the next ones, in one request",
    {
        200: Reply(
            "Each update's status (its error when refused), in order; with a fetch, the jobs "
            "it started or its refusal.",
            ref("Batched"),
        )
    },
    body=Body(JobBatch),
    description="Each update is applied as its PATCH /job/{id} would be, and refused on its own "
    "(404, 409 in its item); a body that is not valid is a 400 with nothing appended.",
)

DELETE_JOB = Operation("Delete a job", {204: NO_CONTENT})

HEARTBEAT = Operation(
    "Heartbeat a running job",
    {204: NO_CONTENT, **NOT_RUNNING},
    body=Body(schema={"type": "object", "properties": {"attempt": JOB_ID}}, required=False),
    query=("attempt",),
)

GET_OUTPUT = Operation("A job's output", {200: Reply("The output (any JSON).", {})})

PUT_OUTPUT = Operation(
    "Set a job's output", {204: NO_CONTENT, **NOT_RUNNING}, body=Body(schema={}), query=("attempt",)
)

HISTORY = Operation(
    "Every event of a job, oldest first",
    {200: Reply("Event items.", array(ref("Event")))},
    description="Answers after the job expired or was deleted; 404 only for an id that never existed.",
)

GET_FILE = Operation(
    "Download one of a job's input files",
    {
        200: Reply("The file's bytes; ETag and Repr-Digest carry its SHA-256.", BYTES, OCTETS),
        404: Reply("No such job, no file of that name, or its blob is gone from the store."),
    },
    description="Content-Type is the file's media type.",
)

PUT_RESULT = Operation(
    "Store a result of the attempt running a job (job_result_added)",
    {
        200: Reply("The result as recorded, with the attempt that added it.", RESULT),
        **NOT_RUNNING,
        413: Reply("The result is over the queue's max_file_size; nothing recorded."),
    },
    body=Body(schema=BYTES, media_type=OCTETS),
    query=("attempt",),
    headers=DIGESTS,
    description="The body is the result's bytes, its Content-Type the result's media type.",
)

MANIFEST = Operation(
    "A job's results: the manifest", {200: Reply("Each result, with its actor and URL.", RESULTS)}
)

GET_RESULT = Operation(
    "One result's bytes",
    {
        200: Reply("The bytes, with ETag and Repr-Digest from the SHA-256.", BINARY, "*/*"),
        304: Reply("If-None-Match named its ETag."),
        404: Reply("No such job, no result of that name, or its blob is gone."),
    },
    headers={"If-None-Match": Param({"type": "string"}, "An ETag from a previous answer.")},
)

RESULTS_ZIP = Operation(
    "A job's results as one zip, streamed",
    {200: Reply("The zip; cut off if a blob does not hash to its SHA-256.", BINARY, "application/zip")},
)

TAGGED = Operation("Ids of jobs with a tag", {200: Reply("Ids (empty if none).", array(JOB_ID))})

LIST_EVENTS = Operation(
    "The ledger, paged",
    {200: Reply("A page of events; next goes back as after.", ref("EventPage"))},
    query=("after", "limit", "type", "queue", "job", "actor", "operation"),
)

BULK = Operation(
    "Requeue, cancel or delete every job that matches a filter",
    {
        200: Reply(
            "The operation finished (or, dry, the count): its id, jobs matched, events appended.",
            ref("BulkAnswer"),
        ),
        202: Reply(
            "Still running after the wait: the counts so far; its progress is at the location.",
            ref("BulkAnswer"),
            location=True,
        ),
    },
    body=Body(BulkRequest),
    query=("wait",),
    description="Every filter given must hold; each job is checked, and acted on, as its single "
    "PATCH or DELETE would be, in batches; its event carries the operation's id. A bad filter is a "
    "400 with nothing appended; dry_run counts and changes nothing.",
)

RESUME_BULK = Operation(
    "Run a cut-short bulk operation again, under its own id",
    {
        200: Reply("It finished: this run's counts.", ref("BulkAnswer")),
        202: Reply("Still running after the wait.", ref("BulkAnswer"), location=True),
        404: Reply("No such operation."),
        409: Reply("It has finished, or this server runs it now."),
    },
    query=("wait",),
)

GET_BULK = Operation(
    "A bulk operation: its filter, progress and end",
    {200: Reply("The operation.", ref("BulkOperation")), 404: Reply("No such operation.")},
)

STREAM_EVENTS = Operation(
    "The ledger live, as Server-Sent Events",
    {
        200: Reply(
            "id: the position after the event, data: the event item.",
            {"type": "string"},
            "text/event-stream",
        )
    },
    query=("after", "type", "queue", "job", "actor", "operation"),
    headers={"Last-Event-ID": Param(EVENT_CURSOR, "Resume after this position (without after).")},
)

HEX_HASHES = array({"type": "string", "pattern": "^[0-9a-f]{64}$"})
INCLUSION: JSON = {
    "type": "object",
    "required": ["index", "size", "leaf", "hashes"],
    "properties": {"index": {"type": "integer", "minimum": 0}, "size": {"type": "integer", "minimum": 1},
                   "leaf": {"type": "string"}, "hashes": HEX_HASHES},
}  # fmt: skip
NO_PROOFS = "The ledger is not sealed here, it has no checkpoint yet, or the event is not in the tree."
CHANGED = "The ledger differs from what was sealed (jobledger ledger verify says where)."

LEDGER_KEY = Operation(
    "The verifier key of the ledger's checkpoints",
    {200: Reply("The key, name+id+base64 (Go's note format).", {"type": "string"}, "text/plain"),
     404: Reply("The ledger is not sealed here.")},
    uses_redis=False,
)  # fmt: skip

LEDGER_CHECKPOINT = Operation(
    "The latest signed checkpoint",
    {200: Reply("The checkpoint, a signed note (C2SP checkpoint).", {"type": "string"}, "text/plain"),
     404: Reply(NO_PROOFS)},
    query=("partition",),
)  # fmt: skip

INCLUSION_PROOF = Operation(
    "An event's inclusion proof",
    {200: Reply("The event's leaf bytes, its index and the proof's hashes.", INCLUSION),
     404: Reply(NO_PROOFS), 409: Reply(CHANGED)},
    query=("event", "size", "partition"),
)  # fmt: skip

CONSISTENCY_PROOF = Operation(
    "A consistency proof between two tree sizes",
    {200: Reply("The proof's hashes.", {"type": "object", "required": ["hashes"],
                                         "properties": {"hashes": HEX_HASHES}}),
     404: Reply(NO_PROOFS), 409: Reply(CHANGED)},
    query=("from", "to", "partition"),
)  # fmt: skip

RECEIPT = Operation(
    "A job's receipt, checked offline",
    {200: Reply("The checkpoint, the key's name and id, and each event's leaf with its inclusion proof.",
                {"type": "object", "required": ["receipt", "job", "origin", "key", "checkpoint", "events"]}),
     404: Reply("No such job, or the ledger is not sealed here."),
     409: Reply("Some of the job's events are not sealed yet (Retry-After says when to ask again), "
                "or the ledger differs from what was sealed.")},
    description="Check it with jobledger ledger verify-receipt FILE --key KEY: no server needed.",
)  # fmt: skip

CREATE_LAUNCHER = Operation(
    "Create a launcher (@cron, @interval, @at, @event)",
    {201: Reply("The new launcher's id.", LAUNCHER_ID, location=True), **NO_QUEUE},
    body=Body(LauncherSpec),
)

LIST_LAUNCHERS = Operation("Every launcher", {200: Reply("Launchers.", array(ref("Launcher")))})

GET_LAUNCHER = Operation(
    "A launcher", {200: Reply("The launcher.", ref("Launcher")), 404: Reply("No such launcher.")}
)

DELETE_LAUNCHER = Operation(
    "Stop and remove a launcher (the jobs it created stay)",
    {204: NO_CONTENT, 404: Reply("No such launcher.")},
)

INFO = Operation("Per-queue counts by status and global statistics", {200: Reply("Counts.", ref("Info"))})

VERSION = Operation("Server version", {200: Reply("Version.", {"type": "string"})}, uses_redis=False)

HEALTH = Operation(
    "Health",
    {200: Reply("healthy, or unhealthy with the reason (always 200).", ref("Health"))},
    uses_redis=False,
)

READY = Operation(
    "Readiness",
    {
        200: Reply("Redis answers and the scheduler runs.", {"type": "object"}),
        503: Reply("Not ready: Redis is unreachable, or the scheduler has stopped or fails."),
    },
    uses_redis=False,
)

METRICS = Operation(
    "Prometheus metrics",
    {
        200: Reply(
            "Prometheus text; jobledger_redis_up 0 when Redis is unreachable.",
            {"type": "string"},
            "text/plain",
        )
    },
    uses_redis=False,
)

OPENAPI = Operation("This document", {200: Reply("OpenAPI 3.1.", {"type": "object"})}, uses_redis=False)
