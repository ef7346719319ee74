"""Commands that talk to a running server over HTTP: ``queues``, ``queue Q``, ``job ID``,
``history ID``, ``submit Q`` (with every job option), ``cancel`` / ``requeue`` / ``delete ID``,
``pause`` / ``resume Q``, and the ``launcher`` commands (:mod:`jobledger.cli.launcher_commands`).

Each prints through :class:`jobledger.cli.output.Output`: tables and colours on a terminal, plain text
when piped, JSON with ``--json``.  The server is ``--url`` (or ``$JOBLEDGER_URL``; default
http://127.0.0.1:8023).  A refusal of the server is printed with its message and exits 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from jobledger.cli import launcher_commands as cli_launchers
from jobledger.cli import result_commands as cli_results
from jobledger.cli.http import AsJson, UrlOption, connected, done, parse_json
from jobledger.cli.output import EVENT_STYLES, STATUS_STYLES, Cell, Output, cell, status_cell, when
from jobledger.client import Event
from jobledger.ledger.option_kinds import bounds
from jobledger.ledger.requests import JOB_STATUSES, JobOptions

app = typer.Typer()
app.add_typer(cli_launchers.app, name="launcher")
app.add_typer(cli_results.app, name="results")


def _option(field: str, metavar: str | None = None, *, repeated: bool = False, after: str = "") -> Any:
    """``submit``'s option for the job option ``field``: its help and bounds as the model declares
    them (a test checks that every option has one)."""
    declared = JobOptions.model_fields[field]
    low, high = bounds(declared)
    help = str(declared.description).rstrip(".") + after + (" (repeatable)" if repeated else "") + "."
    return typer.Option(metavar=metavar, help=help, min=low, max=high)


@app.command()
def queues(url: UrlOption = None, as_json: AsJson = False) -> None:
    """List the queues, with their jobs counted by status."""
    out = Output(as_json)
    with connected(url) as client:
        counts: dict[str, dict[str, int]] = client.info()["queues"]
    if out.is_json:
        return out.json(counts)
    rows = [[cell(name), *(cell(str(c.get(s, 0))) for s in JOB_STATUSES)] for name, c in counts.items()]
    out.table("queues", ["queue", *JOB_STATUSES], rows)


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
    out.record("jobs", [(s, count_cell(s, counts.get(s, 0))) for s in JOB_STATUSES])


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
    tag: Annotated[list[str] | None, _option("tags", "TAG", repeated=True)] = None,
    priority: Annotated[int | None, _option("priority")] = None,
    delay: Annotated[str | None, _option("delay", "DURATION")] = None,
    run_at: Annotated[str | None, _option("run_at", "TIME")] = None,
    unique_key: Annotated[str | None, _option("unique_key")] = None,
    quota_key: Annotated[str | None, _option("quota_key")] = None,
    timeout: Annotated[str | None, _option("timeout", "DURATION")] = None,
    heartbeat_timeout: Annotated[str | None, _option("heartbeat_timeout", "DURATION")] = None,
    expires_after: Annotated[str | None, _option("expires_after", "DURATION")] = None,
    max_queued_time: Annotated[str | None, _option("max_queued_time", "DURATION")] = None,
    retries: Annotated[int | None, _option("retries")] = None,
    retry_delay: Annotated[list[str] | None, _option("retry_delays", "DURATION", repeated=True)] = None,
    retry_backoff: Annotated[
        str | None, _option("retry_backoff", "JSON", after=', e.g. {"base": "10s", "factor": 2, "max": "1h"}')
    ] = None,
    retry_on: Annotated[list[str] | None, _option("retry_on", "KIND", repeated=True)] = None,
    no_retry_on: Annotated[list[str] | None, _option("no_retry_on", "KIND", repeated=True)] = None,
    file: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="PATH",
            exists=True,
            dir_okay=False,
            readable=True,
            help="A file of the job, named by its file name, streamed up with it (repeatable).",
        ),
    ] = None,
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Create a job; prints its id.  Options left out take the queue's settings.

    When a live job of the queue already holds --unique-key, no job is created: the existing job's
    id is printed, and a line on stderr says so."""
    out = Output(as_json)
    options: dict[str, Any] = {
        "tags": tag, "priority": priority, "delay": delay, "run_at": run_at, "unique_key": unique_key,
        "quota_key": quota_key, "timeout": timeout, "heartbeat_timeout": heartbeat_timeout,
        "expires_after": expires_after, "max_queued_time": max_queued_time, "retries": retries,
        "retry_delays": retry_delay, "retry_backoff": parse_json(retry_backoff, "--retry-backoff"),
        "retry_on": retry_on, "no_retry_on": no_retry_on,
    }  # fmt: skip
    with connected(url) as client:
        made = client.submit_job(queue_name, parse_json(input_json, "--input"), files=file or None, **options)
    if not made.created:
        typer.echo(
            f"no job created: job {made.id} of queue {queue_name} already holds unique key "
            f"{unique_key!r}; its id is printed",
            err=True,
        )
    if out.is_json:
        return out.json({"id": made.id, "queue": queue_name, "created": made.created})
    if made.created:
        out.note(f"created job [bold]{made.id}[/] on queue [bold]{queue_name}[/]", str(made.id))
    else:
        out.note(f"job [bold]{made.id}[/] on queue [bold]{queue_name}[/] (existing)", str(made.id))


JobId = Annotated[int, typer.Argument(metavar="ID", help="The job's id.")]
QueueName = Annotated[str, typer.Argument(metavar="QUEUE", help="The queue.")]


@app.command()
def cancel(job_id: JobId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Cancel a job that has not ended."""
    with connected(url) as client:
        client.cancel(job_id)
    done(Output(as_json), f"cancelled job [bold]{job_id}[/]", {"id": job_id, "status": "cancelled"})


@app.command()
def requeue(job_id: JobId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Queue a cancelled, failed or timed-out job again."""
    with connected(url) as client:
        client.requeue(job_id)
    done(Output(as_json), f"queued job [bold]{job_id}[/] again", {"id": job_id, "status": "queued"})


@app.command()
def delete(job_id: JobId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Delete a job (its history stays in the ledger)."""
    with connected(url) as client:
        client.delete(job_id)
    done(Output(as_json), f"deleted job [bold]{job_id}[/]", {"id": job_id, "deleted": True})


@app.command()
def pause(queue_name: QueueName, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Pause a queue: it still takes jobs, but hands none out until resumed."""
    with connected(url) as client:
        client.pause_queue(queue_name)
    done(Output(as_json), f"paused queue [bold]{queue_name}[/]", {"queue": queue_name, "paused": True})


@app.command()
def resume(queue_name: QueueName, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Resume a paused queue."""
    with connected(url) as client:
        client.resume_queue(queue_name)
    done(Output(as_json), f"resumed queue [bold]{queue_name}[/]", {"queue": queue_name, "paused": False})


def count_cell(status: str, count: int) -> Cell:
    """A count of jobs, in its status's colour when there are any."""
    return cell(str(count), STATUS_STYLES.get(status, "") if count else "dim")


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
