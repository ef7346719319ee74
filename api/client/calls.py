"""Every request the client makes, built and parsed in one place, for the sync and async client alike.

A builder returns an :class:`ApiCall`: method, path, query, body, whether it is safe to send again,
and the parser of a successful answer.  :meth:`ApiCall.finish` turns an answer into the result or
the typed error; the two clients only send calls and wait between retries.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx2
from pydantic import TypeAdapter

from jobledger.client.errors import Unavailable, error_for
from jobledger.client.models import (
    Batched,
    Event,
    EventPage,
    FetchedJob,
    Job,
    JobSpec,
    QueueSettings,
    StoredFile,
    StoredResult,
    Submitted,
    wire_value,
)
from jobledger.client.trace_context import current_traceparent
from jobledger.client.transfers import HashedFile, Upload, form_body
from jobledger.contract.traceparent import HEADER as TRACEPARENT_HEADER

R = TypeVar("R")
S = TypeVar("S")

#: "Not given", where None is a value (a job's output may be null).
UNSET: Any = object()

_EVENTS = TypeAdapter(list[Event])


@dataclass(frozen=True)
class ApiCall(Generic[R]):
    """One request and how to read its answer.  ``safe``: sending it twice does no harm, so it may
    be retried after a failure that leaves unknown whether the server acted on it.  ``holds``:
    seconds the server may hold the request before it answers (a long-poll), on top of the
    client's own timeout.  ``headers``: the call's own request headers (an Idempotency-Key).
    ``upload``: a file streamed as the body."""

    method: str
    path: str
    parse: Callable[[httpx2.Response], R]
    params: dict[str, str | int] | None = None
    body: Any = UNSET
    safe: bool = True
    holds: float = 0.0
    headers: dict[str, str] | None = None
    #: a streamed body (files): httpx2's arguments for one try, given where the files it opens are
    #: closed and whether the client is the async one (:mod:`jobledger.client.transfers`)
    stream: Callable[[ExitStack, bool], dict[str, Any]] | None = None

    def read_as(self, parse: Callable[[httpx2.Response], S]) -> ApiCall[S]:
        """The same request, its answer read by ``parse``."""
        return ApiCall(
            self.method, self.path, parse, params=self.params, body=self.body, safe=self.safe,
            holds=self.holds, headers=self.headers, stream=self.stream,
        )  # fmt: skip

    def request_args(
        self, timeout: float, files: ExitStack | None = None, asynchronous: bool = False
    ) -> dict[str, Any]:
        """Keyword arguments of ``httpx2.Client.request`` for this call, for a client whose timeout
        is ``timeout``.  The body is encoded here, not by httpx2's ``json=``, which would send no
        body at all for a JSON ``null``; a streamed body opens its files into ``files``."""
        args: dict[str, Any] = {"params": self.params}
        headers = dict(self.headers or {})
        if self.stream is not None:
            assert files is not None, "a streamed body needs somewhere to close its files"
            streamed = self.stream(files, asynchronous)
            headers.update(streamed.pop("headers", {}))
            args.update(streamed)
        if self.holds:
            args["timeout"] = httpx2.Timeout(timeout, read=timeout + self.holds)
        if self.body is not UNSET:
            text = json.dumps(self.body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            args["content"] = text.encode()
            headers["content-type"] = "application/json"
        if headers:
            args["headers"] = headers
        return args

    def finish(self, response: httpx2.Response) -> R:
        """The parsed result of a 2xx answer; anything else raises the matching :class:`ClientError`."""
        if response.is_success:
            return self.parse(response)
        raise error_for(response.status_code, error_message(response))


def error_message(response: httpx2.Response) -> str:
    """The server's ``{"error": ...}`` message, or what can be said without one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"]
    text = response.text.strip()[:200]
    return f"HTTP {response.status_code}" + (f": {text}" if text else "")


def _json(response: httpx2.Response) -> Any:
    return response.json()


def _none(response: httpx2.Response) -> None:
    return None


def _segment(value: str | int) -> str:
    """A path segment, escaped so a name can never change the path."""
    return quote(str(value), safe="")


def _job(job_id: int, rest: str = "") -> str:
    return f"/job/{_segment(job_id)}{rest}"


def _queue(name: str, rest: str = "") -> str:
    return f"/queue/{_segment(name)}{rest}"


# Queues


def list_queues() -> ApiCall[list[str]]:
    return ApiCall("GET", "/queue", _json)


def put_queue(name: str, settings: dict[str, Any]) -> ApiCall[bool]:
    """Create or replace a queue's settings (a setting left out takes its default); True if created."""
    body = {k: wire_value(v) for k, v in settings.items() if v is not None}
    return ApiCall("PUT", _queue(name), lambda r: r.status_code == 201, body=body)


def get_queue(name: str) -> ApiCall[QueueSettings]:
    return ApiCall("GET", _queue(name), lambda r: QueueSettings.model_validate(r.json()))


def delete_queue(name: str) -> ApiCall[None]:
    return ApiCall("DELETE", _queue(name), _none)


def queue_size(name: str) -> ApiCall[int]:
    return ApiCall("GET", _queue(name, "/size"), lambda r: int(r.json()))


def queue_job_ids(name: str) -> ApiCall[dict[str, list[int]]]:
    return ApiCall("GET", _queue(name, "/job_ids"), _json)


def pause_queue(name: str, paused: bool) -> ApiCall[None]:
    """Pause a queue (it takes jobs but hands none out) or resume it; repeating either is harmless."""
    return ApiCall("PUT", _queue(name, "/pause" if paused else "/resume"), _none)


# Jobs


#: The request header that makes a create safe to resend: the server answers a resend as the first
#: time, without creating anything (see Idempotency-Key in docs/http-api.md).
IDEMPOTENCY_HEADER = "Idempotency-Key"


def _idempotency(key: str | None) -> dict[str, str]:
    """The headers of one logical create: the caller's key, or a new one (a uuid4).  Every resend
    of the call carries the same key, so none of them creates a second time."""
    return {IDEMPOTENCY_HEADER: key if key is not None else str(uuid.uuid4())}


def _create_headers(key: str | None) -> dict[str, str]:
    """A create's headers: its Idempotency-Key, and the caller's traceparent when it is in a span
    (the job records it: the handler's span is that span's child)."""
    headers = _idempotency(key)
    trace = current_traceparent()
    if trace is not None:
        headers[TRACEPARENT_HEADER] = trace
    return headers


def create_job(queue: str, spec: JobSpec, idempotency_key: str | None = None) -> ApiCall[int]:
    """Create a job; its id.  Sent with an Idempotency-Key (``idempotency_key``, else a new one),
    so it is safe to resend after a lost answer: the server answers the first job's id again."""
    return ApiCall(
        "POST", _queue(queue, "/job"), lambda r: int(r.json()), body=spec.body(),
        headers=_create_headers(idempotency_key),
    )  # fmt: skip


def submitted(response: httpx2.Response) -> Submitted:
    """A create's answer read whole: the id, and whether the job was created (201) or is the live
    job of the queue that already held the unique_key (200)."""
    return Submitted(int(response.json()), response.status_code == 201)


def create_job_with_files(
    queue: str, spec: JobSpec, uploads: list[Upload], idempotency_key: str | None = None
) -> ApiCall[int]:
    """Create a job with its files, one multipart request streaming each; its id.  Safe to resend
    as :func:`create_job` (each try reads the files again from their start)."""
    job = json.dumps(spec.body(), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return ApiCall(
        "POST", _queue(queue, "/job"), lambda r: int(r.json()), headers=_create_headers(idempotency_key),
        stream=lambda files, _: form_body(uploads, job, files),
    )  # fmt: skip


def put_blob(upload: Upload, queue: str | None = None) -> ApiCall[dict[str, Any]]:
    """Store one blob, streamed; ``{"sha256", "size"}``, checked against what was sent.  Safe to
    resend: a blob is stored under its hash."""
    return ApiCall(
        "PUT", "/blob", lambda r: upload.checked(r.json()), params={"queue": queue} if queue else None,
        stream=upload.raw_body,
    )  # fmt: skip


def results(job_id: int) -> ApiCall[dict[str, Any]]:
    """The job's results manifest: ``{"id", "status", "results": [...]}``."""
    return ApiCall("GET", _job(job_id, "/results"), _json)


def result_path(job_id: int, name: str) -> str:
    return _job(job_id, f"/results/{_segment(name)}")


def results_zip_path(job_id: int) -> str:
    return _job(job_id, "/results.zip")


def create_jobs(queue: str, specs: list[JobSpec], idempotency_key: str | None = None) -> ApiCall[list[int]]:
    """Create many jobs in one request (one round trip on the server); their ids.  Sent with an
    Idempotency-Key, as :func:`create_job`, so it is safe to resend."""
    body = [spec.body() for spec in specs]
    return ApiCall(
        "POST", _queue(queue, "/jobs"), lambda r: [int(i) for i in r.json()], body=body,
        headers=_create_headers(idempotency_key),
    )  # fmt: skip


def fetch_jobs(
    queue: str,
    count: int,
    worker: str | None = None,
    wait: float | None = None,
    *,
    heartbeat_timeout: bool = False,
) -> ApiCall[list[FetchedJob]]:
    """Start up to ``count`` queued jobs; with ``wait`` (seconds) the server holds the request until
    a job comes or the time is up; with ``heartbeat_timeout`` each job comes with its own.  Not safe
    to resend: a lost answer would strand a job running (until its timeout), so only failures to
    connect are retried."""
    params: dict[str, str | int] = {"count": count}
    if worker is not None:
        params["worker"] = worker
    if wait:
        params["wait"] = f"{wait:g}"
    if heartbeat_timeout:
        params["fields"] = "heartbeat_timeout"
    return ApiCall("GET", _queue(queue, "/job"), _fetched, params=params, safe=False, holds=wait or 0.0)


def _fetched(response: httpx2.Response) -> list[FetchedJob]:
    return [] if response.status_code == 204 else _fetched_jobs(response.json())


def _fetched_jobs(items: list[dict[str, Any]]) -> list[FetchedJob]:
    return [
        FetchedJob(
            int(j["id"]),
            j.get("input"),
            int(j["attempt"]),
            _files(j),
            j.get("heartbeat_timeout"),
            j.get("traceparent"),
        )
        for j in items
    ]


def update_jobs(
    updates: Sequence[Mapping[str, Any]],
    fetch: str | None = None,
    count: int = 1,
    worker: str | None = None,
    *,
    heartbeat_timeout: bool = False,
) -> ApiCall[Batched]:
    """``PATCH /jobs``: many jobs' updates (each a ``PATCH /job/{id}`` body with the job's ``id``)
    and, with ``fetch`` (a queue), up to ``count`` of its jobs started as ``worker`` with them.  Safe
    to resend when every update names its attempt and nothing is fetched (a lost answer to a fetch
    would strand the jobs it started)."""
    body: dict[str, Any] = {"updates": [dict(u) for u in updates]}
    if fetch is not None:
        asked: dict[str, Any] = {"queue": fetch, "count": count}
        if worker is not None:
            asked["worker"] = worker
        if heartbeat_timeout:
            asked["fields"] = ["heartbeat_timeout"]
        body["fetch"] = asked
    safe = fetch is None and all(u.get("attempt") is not None for u in updates)
    return ApiCall("PATCH", "/jobs", _batched, body=body, safe=safe)


def _batched(response: httpx2.Response) -> Batched:
    answer = response.json()
    refusals = tuple(
        None if u["status"] < 300 else error_for(u["status"], u["error"]) for u in answer["updates"]
    )
    refused = answer.get("fetch_error")
    if refused is not None:
        return Batched(refusals, error_for(refused["status"], refused["error"]))
    return Batched(refusals, _fetched_jobs(answer["jobs"]) if "jobs" in answer else None)


def _files(fetched: dict[str, Any]) -> tuple[StoredFile, ...]:
    return tuple(StoredFile.model_validate(f) for f in fetched.get("files") or ())


def get_job(job_id: int) -> ApiCall[Job]:
    return ApiCall("GET", _job(job_id), lambda r: Job.model_validate(r.json()))


def get_fields(job_id: int, names: tuple[str, ...]) -> ApiCall[dict[str, Any]]:
    return ApiCall("GET", _job(job_id), _json, params={"fields": ",".join(names)})


def update_job(
    job_id: int,
    status: str | None = None,
    output: Any = UNSET,
    attempt: int | None = None,
    *,
    progress: int | None = None,
    message: str | None = None,
    error: dict[str, str] | str | None = None,
) -> ApiCall[None]:
    """PATCH a job: status, output, progress / message, and with status failed an ``error`` (text,
    or ``{"kind", "message"}``: its kind decides retry).  Safe to resend when it names the attempt:
    a repeat of an update that took effect answers 204 and changes nothing; once the job has moved
    on (another attempt, a requeue) a repeat is a 409 that changes nothing."""
    given = {"status": status, "attempt": attempt, "progress": progress, "message": message, "error": error}
    body: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if output is not UNSET:
        body["output"] = output
    return ApiCall("PATCH", _job(job_id), _none, body=body, safe=attempt is not None)


def delete_job(job_id: int) -> ApiCall[None]:
    return ApiCall("DELETE", _job(job_id), _none)


def heartbeat(job_id: int, attempt: int | None = None) -> ApiCall[None]:
    params: dict[str, str | int] | None = None if attempt is None else {"attempt": attempt}
    return ApiCall("PUT", _job(job_id, "/heartbeat"), _none, params=params)


def get_output(job_id: int) -> ApiCall[Any]:
    return ApiCall("GET", _job(job_id, "/output"), _json)


def set_output(job_id: int, output: Any, attempt: int | None = None) -> ApiCall[None]:
    params: dict[str, str | int] | None = None if attempt is None else {"attempt": attempt}
    return ApiCall("PUT", _job(job_id, "/output"), _none, params=params, body=output)


def file_path(job_id: int, name: str) -> str:
    """Where one of a job's input files downloads from."""
    return _job(job_id, f"/files/{_segment(name)}")


def add_result(
    job_id: int, name: str, upload: HashedFile, attempt: int | None = None, media_type: str | None = None
) -> ApiCall[StoredResult]:
    """Store ``upload`` as the job's result ``name`` (for ``attempt``: fenced).  Safe to resend: the
    same bytes under the same name replace themselves."""
    params: dict[str, str | int] | None = None if attempt is None else {"attempt": attempt}
    return ApiCall(
        "PUT", _job(job_id, f"/results/{_segment(name)}"), lambda r: StoredResult.model_validate(r.json()),
        params=params, headers=upload.headers(media_type, name), stream=upload.body,
    )  # fmt: skip


def history(job_id: int) -> ApiCall[list[Event]]:
    return ApiCall("GET", _job(job_id, "/history"), lambda r: _EVENTS.validate_python(r.json()))


def list_jobs(queue: str, filters: Mapping[str, Any]) -> ApiCall[dict[str, Any]]:
    """A page of the queue's job summaries: ``{"jobs", "next"}``; ``filters``: status, tag,
    search, since, until, limit, cursor (None: not given)."""
    params = {k: wire_value(v) for k, v in filters.items() if v is not None}
    return ApiCall("GET", _queue(name=queue, rest="/jobs"), _json, params=params)


def bulk(action: str, filters: Mapping[str, Any], wait: float | None = None) -> ApiCall[dict[str, Any]]:
    """``POST /bulk``: ``{"operation", "matched", "done", "finished"}``.  Not safe to send twice
    (a second one would be another operation), but its effect is: each job is acted on once."""
    body = {"action": action, **{k: wire_value(v) for k, v in filters.items() if v is not None}}
    params: dict[str, str | int] | None = None if wait is None else {"wait": str(wait)}
    return ApiCall("POST", "/bulk", _json, params=params, body=body, safe=False, holds=wait or 10.0)


def bulk_operation(operation: str) -> ApiCall[dict[str, Any]]:
    return ApiCall("GET", f"/bulk/{_segment(operation)}", _json)


def tagged(tag: str) -> ApiCall[list[int]]:
    return ApiCall("GET", f"/tag/{_segment(tag)}", _json)


# The verifiable ledger


def _partition(partition: int | None, **more: int | str | None) -> dict[str, str | int] | None:
    params = {k: v for k, v in {"partition": partition, **more}.items() if v is not None}
    return params or None


def receipt(job_id: int) -> ApiCall[dict[str, Any]]:
    return ApiCall("GET", _job(job_id, "/receipt"), _json)


def ledger_key() -> ApiCall[str]:
    return ApiCall("GET", "/ledger/key", lambda r: r.text.strip())


def ledger_checkpoint(partition: int | None = None) -> ApiCall[str]:
    return ApiCall("GET", "/ledger/checkpoint", lambda r: r.text, params=_partition(partition))


def inclusion_proof(
    event: str, size: int | None = None, partition: int | None = None
) -> ApiCall[dict[str, Any]]:
    params = _partition(partition, event=event, size=size)
    return ApiCall("GET", "/ledger/proof/inclusion", _json, params=params)


def consistency_proof(
    old: int, new: int | None = None, partition: int | None = None
) -> ApiCall[dict[str, Any]]:
    params = _partition(partition, **{"from": old, "to": new})
    return ApiCall("GET", "/ledger/proof/consistency", _json, params=params)


# Server


def info() -> ApiCall[dict[str, Any]]:
    return ApiCall("GET", "/info", _json)


def version() -> ApiCall[str]:
    return ApiCall("GET", "/info/version", lambda r: str(r.json()))


def health() -> ApiCall[dict[str, Any]]:
    return ApiCall("GET", "/health", _json)


# Launchers


def create_launcher(type: str, arguments: str | dict[str, Any], queue: str, **spec: Any) -> ApiCall[int]:
    """Create a launcher (``POST /launcher``): ``type`` ``@cron`` / ``@interval`` / ``@at`` /
    ``@event``, its ``arguments``, its ``queue``, and ``template``, ``max_pending``, ``debounce``
    as the server takes them; its id.  Sent with an Idempotency-Key (``idempotency_key=`` in
    ``spec``, else a new one), as :func:`create_job`, so it is safe to resend."""
    key = spec.pop("idempotency_key", None)
    body = {"type": type, "arguments": arguments, "queue": queue, **spec}
    return ApiCall("POST", "/launcher", lambda r: int(r.json()["id"]), body=body, headers=_idempotency(key))


def list_launchers() -> ApiCall[list[dict[str, Any]]]:
    return ApiCall("GET", "/launcher", _json)


def _launcher(launcher: int | str, tail: str = "") -> str:
    """The path of a launcher, by its id or its name."""
    return f"/launcher/{quote(str(launcher), safe='')}{tail}"


def put_launcher(
    name: str, type: str, arguments: str | dict[str, Any], queue: str, **spec: Any
) -> ApiCall[dict[str, Any]]:
    """Declare the launcher ``name`` (``PUT /launcher/{name}``): created, or given this declaration;
    ``{id, name, outcome}``, outcome ``created``, ``updated`` or ``unchanged``.  Safe to resend."""
    body = {"type": type, "arguments": arguments, "queue": queue, **spec}
    return ApiCall("PUT", _launcher(name), _json, body=body)


def get_launcher(launcher: int | str) -> ApiCall[dict[str, Any]]:
    return ApiCall("GET", _launcher(launcher), _json)


def delete_launcher(launcher: int | str) -> ApiCall[None]:
    return ApiCall("DELETE", _launcher(launcher), _none)


def pause_launcher(launcher: int | str, paused: bool) -> ApiCall[None]:
    """Pause a launcher or resume it; repeating either is harmless."""
    return ApiCall("PUT", _launcher(launcher, "/pause" if paused else "/resume"), _none)


def fire_launcher(launcher: int | str) -> ApiCall[int]:
    """Fire a launcher now, by hand; the id of the job it created."""
    return ApiCall("POST", _launcher(launcher, "/fire"), lambda r: int(r.json()["job"]))


# The ledger


def list_events(after: str | None, limit: int, filters: dict[str, str | int]) -> ApiCall[EventPage]:
    """One page of the ledger's events after ``after`` (exclusive), matching ``filters``."""
    params: dict[str, str | int] = {"limit": limit, **filters}
    if after is not None:
        params["after"] = after
    return ApiCall("GET", "/events", _event_page, params=params)


def _event_page(response: httpx2.Response) -> EventPage:
    body = response.json()
    return EventPage(_EVENTS.validate_python(body["events"]), body.get("next"))


def stream_events(filters: dict[str, str | int]) -> ApiCall[None]:
    """``GET /events/stream``: read as a stream by the clients, not parsed whole; the call says how
    to retry it and how to read an error answer."""
    return ApiCall("GET", "/events/stream", _none, params=filters)


#: Where the client finds the server when given no URL and ``JOBLEDGER_URL`` is not set.
DEFAULT_URL = "http://127.0.0.1:8023"


def resolve_url(url: str | None) -> str:
    """The server's base URL: ``url``, else ``$JOBLEDGER_URL``, else :data:`DEFAULT_URL`."""
    return (url or os.environ.get("JOBLEDGER_URL") or DEFAULT_URL).rstrip("/")


def resolve_token(token: str | None) -> str | None:
    """The API token: ``token``, else ``$JOBLEDGER_TOKEN``, else None (no Authorization header)."""
    return token or os.environ.get("JOBLEDGER_TOKEN") or None


def auth_headers(token: str | None) -> dict[str, str]:
    """The headers that present ``token`` (none without one)."""
    return {"authorization": f"Bearer {token}"} if token else {}


def unreachable(url: str, exc: httpx2.TransportError) -> Unavailable:
    """The error for a request that got no answer, after any retries."""
    return Unavailable(f"cannot reach jobledger at {url}: {str(exc) or type(exc).__name__}")
