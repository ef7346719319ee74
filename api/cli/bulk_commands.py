"""The ``jobs`` commands: list a queue's jobs (``jobs list Q``, with ``--search``), and requeue,
cancel or delete every job that matches a filter (``jobs requeue|cancel|delete --queue Q ...``)
through ``POST /bulk``.

An action first asks the server how many jobs match (a dry run) and asks for confirmation with
that count, unless ``--yes``; ``--dry-run`` only shows the count.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from jobledger.cli.http import AsJson, UrlOption, connected
from jobledger.cli.output import Cell, Output, cell, status_cell
from jobledger.client import Client
from jobledger.ledger.requests import JOB_STATUSES

#: Seconds between two reads of a long operation's progress.
POLL = 0.5

app = typer.Typer(help="List a queue's jobs; requeue, cancel or delete many jobs at once.")

_STATUSES = ", ".join(JOB_STATUSES)
Queue = Annotated[str | None, typer.Option("--queue", help="Only jobs of this queue.")]
Status = Annotated[str | None, typer.Option("--status", help=f"Only jobs with this status ({_STATUSES}).")]
Tag = Annotated[str | None, typer.Option("--tag", help="Only jobs with this tag.")]
ErrorKind = Annotated[
    str | None, typer.Option("--error-kind", help="Only jobs whose latest error is of this kind.")
]
Since = Annotated[
    str | None,
    typer.Option("--since", help="Only jobs that reached their status at or after this RFC 3339 time."),
]
Until = Annotated[
    str | None, typer.Option("--until", help="Only jobs that reached their status before this RFC 3339 time.")
]
Ids = Annotated[list[int] | None, typer.Option("--id", help="Only this job (repeatable).")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show how many jobs match; change nothing.")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


@app.command("list")
def list_jobs(
    queue: Annotated[str, typer.Argument(help="The queue.")],
    status: Status = None,
    tag: Tag = None,
    search: Annotated[
        str | None,
        typer.Option("--search", help="Only jobs whose id, tags, input, output or errors hold this text."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many jobs.", min=1, max=1000)] = 100,
    cursor: Annotated[
        int | None, typer.Option("--cursor", help="Go on after this job (a page's next).")
    ] = None,
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """List a queue's jobs, oldest first, by status, tag or a text they hold."""
    out = Output(as_json)
    with connected(url) as client:
        page = client.jobs(queue, status=status, tag=tag, search=search, limit=limit, cursor=cursor)
    if out.is_json:
        return out.json(page)
    rows: list[list[Cell]] = [
        [cell(j["id"]), status_cell(j["status"]), cell(", ".join(j["tags"] or [])), cell(j["created_at"])]
        for j in page["jobs"]
    ]
    out.table(f"jobs of {queue}", ["id", "status", "tags", "created"], rows)
    if page["next"] is not None:
        out.note(f"more: --cursor {page['next']}", f"next\t{page['next']}")


def _act(
    action: str, filters: dict[str, Any], dry_run: bool, yes: bool, url: str | None, as_json: bool
) -> None:
    out = Output(as_json)
    with connected(url) as client:
        preview = client.bulk(action, **filters, dry_run=True)
        if dry_run or not preview["matched"]:
            return _said(out, action, preview)
        if not yes:
            typer.confirm(f"{action} {preview['matched']} job(s)?", abort=True)
        _said(out, action, _finished(client, client.bulk(action, **filters)))


def _finished(client: Client, result: dict[str, Any]) -> dict[str, Any]:
    """Wait for an operation that the server runs on after its answer, reading its progress."""
    while not result["finished"]:
        time.sleep(POLL)
        record = client.bulk_operation(result["operation"])
        matched = record["matched"] if record["matched"] is not None else result["matched"]
        finished = record["finished_at"] is not None
        result = {**result, "done": record["done"], "finished": finished, "matched": matched}
        if not result["finished"] and not record["running"]:
            break  # stopped on the server: POST /bulk/{operation} finishes it
    return result


def _said(out: Output, action: str, result: dict[str, Any]) -> None:
    if out.is_json:
        return out.json(result)
    if result["operation"] is None:
        return out.note(f"{result['matched']} job(s) match", str(result["matched"]))
    verb = {"requeue": "requeued", "cancel": "cancelled", "delete": "deleted"}[action]
    out.note(f"{verb} {result['done']} job(s) (operation {result['operation']})", str(result["done"]))


def _command(action: str, summary: str) -> None:
    def command(
        queue: Queue = None,
        status: Status = None,
        tag: Tag = None,
        error_kind: ErrorKind = None,
        since: Since = None,
        until: Until = None,
        ids: Ids = None,
        dry_run: DryRun = False,
        yes: Yes = False,
        url: UrlOption = None,
        as_json: AsJson = False,
    ) -> None:
        filters = {"queue": queue, "status": status, "tag": tag, "error_kind": error_kind, "since": since,
                   "until": until, "ids": ids or None}  # fmt: skip
        _act(action, filters, dry_run, yes, url, as_json)

    command.__doc__ = summary
    app.command(action)(command)


_command("requeue", "Queue again every cancelled, failed or timed-out job that matches the filters.")
_command("cancel", "Cancel every job that matches the filters and has not ended.")
_command("delete", "Delete every job that matches the filters (their history stays in the ledger).")
