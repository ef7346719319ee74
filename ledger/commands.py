"""The commands of the ledger, as descriptions: which script, which arguments, how to read the reply.

Each command is one Lua script, run as a Redis function with FCALL: it checks state, appends its
event(s) and applies them, atomically, in one round trip.  A :class:`Call` is pure data, so the
same command runs through the sync :class:`jobledger.ledger.runner.Ledger` or the async
:class:`jobledger.ledger.runner.AsyncLedger`, one at a time
or many in a pipeline.  ``now`` is not an argument here: the runner adds it from its clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from jobledger.contract.files import MAX_FILES
from jobledger.contract.traceparent import valid as valid_traceparent
from jobledger.ledger import errors
from jobledger.ledger.calls import Call as Call  # a command, as every runner takes it
from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.files import FileRef
from jobledger.ledger.partitions import Route, id_route, queue_route
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings, checked_worker_id, json_text

T = TypeVar("T")


@dataclass(frozen=True)
class Fetched:
    """A job handed to a worker: Ocypod's ``{id, input}`` plus the attempt it runs as, its
    ``heartbeat_timeout`` in ms (0: off), its files (JSON text of a list of references, None when
    it has none) and the traceparent it was created with (None: none), read with it so a worker need
    not ask again."""

    id: int
    attempt: int
    input_text: str | None
    heartbeat_timeout_ms: int = 0
    files_text: str | None = None
    traceparent: str | None = None


def _int(reply: Any) -> int:
    return int(reply)


def _ids(reply: Any) -> list[int]:
    return [int(x) for x in reply]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


#: The values a fetch's answer holds per job started (``ledger/lua/lib/start_jobs.lua``).
FETCHED_VALUES = 6


def _fetched(reply: Any) -> list[Fetched]:
    """The jobs a fetch started, from the script's flat list of six values per job (one list: each
    list of a script's answer costs the server a reply of its own)."""
    n = FETCHED_VALUES
    jobs = (reply[at : at + n] for at in range(0, len(reply), n))
    return [
        Fetched(int(i), int(a), _text(inp), int(beat), _text(files), _text(trace))
        for i, a, inp, beat, files, trace in jobs
    ]


def put_queue(name: str, settings: QueueSettings) -> Call[bool]:
    """Create or replace a queue's settings; True when it was created."""
    return Call("put_queue", (name, settings.to_json()), lambda r: int(r) == 1, queue_route(name))


def delete_queue(name: str) -> Call[int]:
    """Delete a queue and its queued jobs; the number of jobs deleted."""
    return Call("delete_queue", (name,), _int, queue_route(name))


@dataclass(frozen=True)
class Idempotency:
    """A create's Idempotency-Key: the key, the SHA-256 (hex) of the request it was sent with, and
    how long (ms) the ledger remembers it.  The same key with the same hash is answered as the first
    time, without appending; with another hash it is refused (:class:`~jobledger.ledger.errors.Mismatch`)."""

    key: str
    request_hash: str
    window: int


def _idempotency_args(idempotency: Idempotency | None) -> tuple[str | int, ...]:
    if idempotency is None:
        return ("", "", 0)
    return (idempotency.key, idempotency.request_hash, idempotency.window)


@dataclass(frozen=True)
class Created:
    """A create's answer: the id, False when a live job already held the unique_key, and ``again``
    when it is the first answer given again for the same Idempotency-Key (nothing was appended)."""

    id: int
    created: bool
    again: bool = False


def _created(reply: Any) -> Created:
    if isinstance(reply, int):  # create_job's answer for a job it created: just the id
        return Created(reply, True, False)
    return Created(int(reply[0]), int(reply[1]) == 1, len(reply) > 2 and int(reply[2]) == 1)


def _traced(options_json: str, traceparent: str | None) -> str:
    """A create's options JSON with the request's traceparent, which job_created records (a
    traceparent is no option of the request's body: it comes from its header)."""
    if traceparent is None:
        return options_json
    if not valid_traceparent(traceparent):
        raise ValueError(f"not a traceparent: {traceparent[:60]!r}")
    return f'{options_json[:-1]}{"," if options_json != "{}" else ""}"traceparent":"{traceparent}"}}'


def create_job(
    queue: str,
    options: JobOptions,
    launcher: str | None = None,
    idempotency: Idempotency | None = None,
    traceparent: str | None = None,
) -> Call[Created]:
    """Create a job (queued, or scheduled until run_at), unless its unique_key is held or its
    Idempotency-Key already answered.  Its files must be resolved (sizes known: the blob store's).
    ``traceparent``: the creating request's (W3C), recorded in job_created."""
    _require_resolved(options)
    args = (
        queue,
        _traced(options.options_json(), traceparent),
        options.input_text(),
        launcher or "",
        *_idempotency_args(idempotency),
    )
    return Call("create_job", args, _created, queue_route(queue))


def create_jobs(
    queue: str, jobs: list[JobOptions], idempotency: Idempotency | None = None, traceparent: str | None = None
) -> Call[list[Created]]:
    """Create many jobs on one queue in one script (one round trip); answered again (each
    ``again``) when the Idempotency-Key already answered.  Each records ``traceparent``."""
    args: list[str | int] = [queue, *_idempotency_args(idempotency)]
    for options in jobs:
        _require_resolved(options)
        args += [_traced(options.options_json(), traceparent), options.input_text()]
    return Call("create_jobs", tuple(args), lambda reply: [_created(r) for r in reply], queue_route(queue))


def _require_resolved(options: JobOptions) -> None:
    if not options.files_resolved():
        raise ValueError("a job's files must name their size and media type (as the blob store found them)")


def _worker(worker: str | None) -> str:
    """A fetching worker's id as the scripts take it ('' for none); BadRequest when it cannot be one."""
    if not worker:
        return ""
    try:
        return checked_worker_id(worker)
    except ValueError as exc:
        raise errors.BadRequest(str(exc)) from None


def fetch_jobs(queue: str, count: int = 1, worker: str | None = None) -> Call[list[Fetched]]:
    """Start up to ``count`` queued jobs, recording ``worker`` on them."""
    return Call("fetch_jobs", (queue, count, _worker(worker)), _fetched, queue_route(queue))


def update_job(job_id: int, update: JobUpdate) -> Call[int]:
    """PATCH semantics: progress, output, status; the number of events appended (0 for an empty patch)."""
    return Call("update_job", _update_args(job_id, update), _int, id_route(job_id))


def _update_args(job_id: int, update: JobUpdate) -> tuple[Any, ...]:
    attempt = "" if update.attempt is None else update.attempt
    status, output = update.status or "", update.output_text()
    return (job_id, status, output, attempt, update.progress_json(), update.error_json())


def return_job(job_id: int, attempt: int) -> Call[int]:
    """The worker running ``attempt`` hands the job back unfinished (running -> queued,
    ``job_returned``): PATCH ``{"status": "queued", "attempt": N}`` of a running job."""
    return update_job(job_id, JobUpdate(status="queued", attempt=attempt))


def update_jobs(updates: Sequence[tuple[int, JobUpdate]]) -> Call[list[int | JobLedgerError]]:
    """Many updates in one script call, each as :func:`update_job` and checked on its own: per
    update, the number of events appended, or the refusal (an exception, returned, not raised)."""
    args = tuple(a for job_id, update in updates for a in _update_args(job_id, update))
    ids = tuple(job_id for job_id, _ in updates)

    def part(indices: list[int], with_queue: bool) -> Call[Any]:
        return update_jobs([updates[i] for i in indices])

    return Call("update_jobs", args, _outcomes, Route(ids=ids, part=part, join=_joined_outcomes))


def _joined_outcomes(parts: list[tuple[list[int], list[int | JobLedgerError]]]) -> list[int | JobLedgerError]:
    """The outcomes of a batch run as one call per partition, back in the batch's order."""
    joined: dict[int, int | JobLedgerError] = {}
    for indices, outcomes in parts:
        joined.update(zip(indices, outcomes, strict=True))
    return [joined[i] for i in range(len(joined))]


@dataclass(frozen=True)
class UpdatedAndFetched:
    """What :func:`update_and_fetch` answers: each update's outcome (as :func:`update_jobs`), and the
    jobs started, or the fetch's refusal (returned, not raised: the updates stand)."""

    outcomes: list[int | JobLedgerError]
    fetched: list[Fetched] | JobLedgerError


def update_and_fetch(
    updates: Sequence[tuple[int, JobUpdate]], queue: str, count: int, worker: str | None = None
) -> Call[UpdatedAndFetched]:
    """:func:`update_jobs` then :func:`fetch_jobs`, in one script call: a worker records the jobs it
    finished and takes its next ones in one round trip."""
    args = tuple(a for job_id, update in updates for a in _update_args(job_id, update))
    ids = tuple(job_id for job_id, _ in updates)

    def part(indices: list[int], with_queue: bool) -> Call[Any]:
        chosen = [updates[i] for i in indices]
        return update_and_fetch(chosen, queue, count, worker) if with_queue else update_jobs(chosen)

    def join(parts: list[tuple[list[int], Any]]) -> UpdatedAndFetched:
        fetched = next(p.fetched for _, p in parts if isinstance(p, UpdatedAndFetched))
        outcomes = [(i, p.outcomes if isinstance(p, UpdatedAndFetched) else p) for i, p in parts]
        return UpdatedAndFetched(_joined_outcomes(outcomes), fetched)

    route = Route(queue=queue, ids=ids, part=part, join=join)

    def parse(reply: list[Any]) -> UpdatedAndFetched:
        # one flat list: an outcome per update, then six values per job started, or the refusal
        outcomes, started = reply[: len(updates)], reply[len(updates) :]
        if len(started) == 1:
            return UpdatedAndFetched(_outcomes(outcomes), _refusal(started[0]))
        return UpdatedAndFetched(_outcomes(outcomes), _fetched(started))

    return Call("update_and_fetch", (queue, count, _worker(worker), *args), parse, route)


def _refusal(item: Any) -> JobLedgerError:
    text = item.decode() if isinstance(item, bytes) else str(item)
    refusal = errors.from_reply(text)
    if refusal is None:
        raise ValueError(f"unexpected reply {text!r}")
    return refusal


def _outcomes(reply: list[Any]) -> list[int | JobLedgerError]:
    return [item if isinstance(item, int) else _refusal(item) for item in reply]


def set_output(job_id: int, output: Any, attempt: int | None = None) -> Call[int]:
    """PUT /job/{id}/output."""
    args = (job_id, "", json_text(output), "" if attempt is None else attempt, "", "")
    return Call("update_job", args, _int, id_route(job_id))


def pause_queue(name: str, paused: bool) -> Call[bool]:
    """Pause or resume a queue; True when its state changed."""
    return Call("pause_queue", (name, "1" if paused else "0"), lambda r: int(r) == 1, queue_route(name))


def heartbeat(job_id: int, attempt: int | None = None) -> Call[int]:
    return Call("heartbeat", (job_id, "" if attempt is None else attempt), _int, id_route(job_id))


def add_result(job_id: int, result: FileRef, attempt: int | None = None) -> Call[int]:
    """The running attempt (``attempt``, when the caller names it: fenced) stores ``result``, a blob
    the store holds, as one of the job's results; the attempt that added it."""
    text = json.dumps(result.model_dump(), separators=(",", ":"))
    return Call(
        "add_result", (job_id, "" if attempt is None else attempt, text, MAX_FILES), _int, id_route(job_id)
    )


def delete_job(job_id: int) -> Call[int]:
    return Call("delete_job", (job_id,), _int, id_route(job_id))


def check_timeouts(limit: int) -> Call[list[int]]:
    """Time out up to ``limit`` running jobs past their deadline; their ids."""
    return Call("check_timeouts", (limit,), _ids)


def check_retries(limit: int) -> Call[list[int]]:
    """Requeue (or end) up to ``limit`` jobs whose retry time has come; their ids."""
    return Call("check_retries", (limit,), _ids)


def check_releases(limit: int) -> Call[list[int]]:
    """Release up to ``limit`` scheduled jobs whose run_at has come; their ids."""
    return Call("check_releases", (limit,), _ids)


def check_queued(limit: int) -> Call[list[int]]:
    """Time out up to ``limit`` queued jobs past their max_queued_time; their ids."""
    return Call("check_queued", (limit,), _ids)


def check_expiry(limit: int) -> Call[list[int]]:
    """Expire up to ``limit`` ended jobs past ``expires_after``; their ids."""
    return Call("check_expiry", (limit,), _ids)


def check_idempotency(limit: int) -> Call[list[str]]:
    """Forget up to ``limit`` Idempotency-Keys whose window is over; the keys."""
    return Call("check_idempotency", (limit,), lambda reply: [_text(k) or "" for k in reply])


def create_launcher(queue: str, data_json: str, idempotency: Idempotency | None = None) -> Call[Created]:
    """A new launcher on an existing queue, from its ``launcher_created`` data (see
    :func:`jobledger.ledger.launchers.created_data`); its id, ``again`` when the Idempotency-Key
    already answered."""
    args = (queue, data_json, *_idempotency_args(idempotency))
    return Call(
        "create_launcher", args, lambda r: Created(int(r[0]), True, int(r[1]) == 1), queue_route(queue)
    )


def delete_launcher(launcher_id: int) -> Call[int]:
    return Call("delete_launcher", (launcher_id,), _int, id_route(launcher_id))


def fire_launcher(
    launcher_id: int, due_at: int, next_at: int | None, missed: int | None = 0, trigger: str | None = None
) -> Call[int]:
    """Fire (or skip) a launcher whose time ``due_at`` has come, moving it on to ``next_at``; does
    nothing (0) unless it is still due at ``due_at``.  1 fired, 2 skipped, 5 held back; a held-back
    launcher: 0 while still held, 4 released, or, with ``missed`` None (not counted), 6 when it would
    be released (then nothing was appended)."""
    args = (launcher_id, due_at, "" if next_at is None else next_at, "" if missed is None else missed,
            trigger or "")  # fmt: skip
    return Call("fire_launcher", args, _int, id_route(launcher_id))


def pause_launcher(launcher_id: int) -> Call[bool]:
    """Pause a launcher; True when its state changed."""
    return Call(
        "pause_launcher", (launcher_id, "1", "", "", "", ""), lambda r: int(r) == 1, id_route(launcher_id)
    )


def resume_launcher(
    launcher_id: int, next_at: int | None, schedule: tuple[str, str, str | None]
) -> Call[bool]:
    """Resume a launcher, firing next at ``next_at`` (computed from ``schedule``: its type, arguments
    and tz); True when its state changed."""
    kind, arguments, tz = schedule
    args = (launcher_id, "0", "" if next_at is None else next_at, kind, arguments, tz or "")
    return Call("pause_launcher", args, lambda r: int(r) == 1, id_route(launcher_id))


def fire_launcher_now(launcher_id: int) -> Call[int]:
    """Fire a launcher by hand, now; the id of the job it created."""
    return Call("fire_launcher_now", (launcher_id,), _int, id_route(launcher_id))


def trigger_launcher(
    launcher_id: int, event_id: str, source: int | None = None, fields: dict[str, str] | None = None
) -> Call[int]:
    """An event that matches an @event launcher: 0 nothing to do (already seen, or no match), 1 fired,
    2 skipped, 3 triggered (debounced: it fires later).  An event of the launcher's own stream is read
    back by the script; one of another partition ``source`` of a split ledger comes with its
    ``fields`` (type, queue, at, data: the entry as the stream holds it), matched by the script."""
    args: tuple[Any, ...] = (launcher_id, event_id)
    if source is not None:
        f = fields or {}
        data = json.loads(f.get("data") or "{}") if f.get("type") == "job_created" else {}
        mine = {"launcher": data["launcher"]} if "launcher" in data else {}
        args += (source, f.get("type", ""), f.get("queue", ""), f.get("at", "0"), json.dumps(mine))
    return Call("trigger_launcher", args, _int, id_route(launcher_id))
