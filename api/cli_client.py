"""Commands that talk to a running server over HTTP: ``queues``, ``queue Q``, ``job ID``,
``history ID`` and ``submit Q``.

Each prints through :class:`api.cli_output.Output`: tables and colours on a terminal, plain text
when piped, JSON with ``--json``.  The server is ``--url`` (or ``$JOBLEDGER_URL``; default
http://127.0.0.1:8023).  A refusal of the server is printed with its message and exits 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any

import typer

from api.cli import fail
from api.cli_output import EVENT_STYLES, STATUS_STYLES, Cell, JsonOption, Output, cell, status_cell
from api.client import Client, ClientError, Event
from api.client.calls import DEFAULT_URL
from projections.views import JOB_STATUSES

app = typer.Typer()

UrlOption = Annotated[
    str | None,
    typer.Option("--url", envvar="JOBLEDGER_URL", help=f"The jobledger server (default {DEFAULT_URL})."),
]
AsJson = Annotated[bool, JsonOption]

STATUSES = JOB_STATUSES
_ERROR_NAMES = {"BadRequest": "bad request", "NotFound": "not found", "Conflict": "conflict"}


@contextmanager
def connected(url: str | None) -> Iterator[Client]:
    """A client of the server; a refusal or an unreachable server ends the command with exit 1."""
    try:
        with Client(url) as client:
            yield client
    except ClientError as exc:
        name = type(exc).__name__
        fail(f"{_ERROR_NAMES.get(name, name.lower())}: {exc.message}")


@app.command()
def queues(url: UrlOption = None, as_json: AsJson = False) -> None:
    """List the queues, with their jobs counted by status."""
    out = Output(as_json)
    with connected(url) as client:
        counts: dict[str, dict[str, int]] = client.info()["queues"]
    if out.is_json:
        return out.json(counts)
    rows = [[cell(name), *(cell(str(c.get(s, 0))) for s in STATUSES)] for name, c in counts.items()]
    out.table("queues", ["queue", *STATUSES], rows)


@app.command()
def queue(
    name: Annotated[str, typer.Argument(help="The queue.")], url: UrlOption = None, as_json: AsJson = False
) -> None:
    """Show a queue's settings and its jobs counted by status."""
    out = Output(as_json)
    with connected(url) as client:
        settings = client.queue(name).model_dump(mode="json")
        counts: dict[str, int] = client.info()["queues"].get(name, {})
    if out.is_json:
        return out.json({"name": name, "settings": settings, "counts": counts})
    out.record(f"queue {name}", [(k, cell(v)) for k, v in settings.items()])
    out.record("jobs", [(s, count_cell(s, counts.get(s, 0))) for s in STATUSES])


@app.command()
def job(
    job_id: Annotated[int, typer.Argument(help="The job's id.")],
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Show every field of a job."""
    out = Output(as_json)
    with connected(url) as client:
        fields = client.get(job_id).model_dump(mode="json")
    if out.is_json:
        return out.json(fields)
    out.record(
        f"job {job_id}", [(k, status_cell(v) if k == "status" else cell(v)) for k, v in fields.items()]
    )


@app.command()
def history(
    job_id: Annotated[int, typer.Argument(help="The job's id.")],
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Show a job's timeline: every event, the time since the step before, the worker and errors."""
    out = Output(as_json)
    with connected(url) as client:
        events = client.history(job_id)
    if out.is_json:
        return out.json([e.model_dump(mode="json") for e in events])
    columns = ["time", "after", "event", "attempt", "worker", "error", "detail"]
    out.table(f"job {job_id}", columns, timeline(events, plain=out.mode == "plain"))


@app.command()
def submit(
    queue_name: Annotated[str, typer.Argument(metavar="QUEUE", help="The queue to add the job to.")],
    input_json: Annotated[str | None, typer.Option("--input", help="The job's input, as JSON.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="A tag (repeatable).")] = None,
    timeout: Annotated[str | None, typer.Option(help="Run at most this long, e.g. 10m.")] = None,
    heartbeat_timeout: Annotated[
        str | None, typer.Option(help="Time out without a heartbeat this long.")
    ] = None,
    expires_after: Annotated[str | None, typer.Option(help="Keep the ended job this long.")] = None,
    retries: Annotated[int | None, typer.Option(min=0, help="Retries after a failure.")] = None,
    retry_delay: Annotated[list[str] | None, typer.Option(help="Delay before a retry (repeatable).")] = None,
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Create a job; prints its id.  Options left out take the queue's settings."""
    out = Output(as_json)
    options: dict[str, Any] = {
        "tags": tag, "timeout": timeout, "heartbeat_timeout": heartbeat_timeout,
        "expires_after": expires_after, "retries": retries, "retry_delays": retry_delay,
    }  # fmt: skip
    with connected(url) as client:
        job_id = client.submit(queue_name, parse_input(input_json), **options)
    if out.is_json:
        return out.json({"id": job_id, "queue": queue_name})
    out.note(f"created job [bold]{job_id}[/] on queue [bold]{queue_name}[/]", str(job_id))


def count_cell(status: str, count: int) -> Cell:
    """A count of jobs, in its status's colour when there are any."""
    return cell(str(count), STATUS_STYLES.get(status, "") if count else "dim")


def parse_input(text: str | None) -> Any:
    """``--input`` as JSON; a usage error (exit 2) when it is not."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        fail(f"--input is not valid JSON: {exc}", code=2)


def timeline(events: list[Event], plain: bool) -> list[list[Cell]]:
    """One row per event: when, how long after the step before, what, for which attempt and worker,
    and what went wrong."""
    rows, previous, attempt, worker = [], None, None, None
    for event in events:
        if event.type == "job_started":
            attempt, worker = event.data.get("attempt"), event.data.get("worker")
        after = "" if previous is None else elapsed((event.at - previous).total_seconds(), plain)
        kind = cell(event.type, EVENT_STYLES.get(event.type, ""))
        rows.append([
            cell(when(event.at, plain)), cell(after, "dim"), kind, cell(attempt), cell(worker),
            cell(error_of(event), "red"), cell(detail_of(event)),
        ])  # fmt: skip
        previous = event.at
    return rows


def when(at: datetime, plain: bool) -> str:
    """RFC 3339 when piped; a shorter, readable time on a terminal."""
    if plain:
        return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return at.strftime("%Y-%m-%d %H:%M:%S.") + f"{at.microsecond // 1000:03d}"


def elapsed(seconds: float, plain: bool) -> str:
    """Seconds as ``0.250`` when piped; ``+250ms``, ``+1.5s``, ``+2m03s`` or ``+1h02m`` on a terminal."""
    if plain:
        return f"{seconds:.3f}"
    if seconds < 1:
        return f"+{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"+{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"+{minutes}m{secs:02d}s"
    return f"+{minutes // 60}h{minutes % 60:02d}m"


def error_of(event: Event) -> str | None:
    """What went wrong, if the event says: its error as ``kind: message`` (timeouts carry one too)."""
    error = event.data.get("error")
    if isinstance(error, dict):
        return ": ".join(str(error[k]) for k in ("kind", "message") if error.get(k))
    return str(error) if error else None


def detail_of(event: Event) -> str | None:
    """The rest worth a glance: whether a failure ends the job, why a job was requeued, its output."""
    data = event.data
    if event.type in ("job_failed", "job_timed_out"):
        return "ended" if data.get("ended") else "will retry"
    if event.type == "job_requeued":
        return "retry" if data.get("retry") else "manual requeue"
    if "reason" in data:
        return str(data["reason"])
    if event.type in ("job_completed", "job_output_set") and "output" in data:
        return "output " + json.dumps(data["output"], separators=(",", ":"))[:60]
    return None
