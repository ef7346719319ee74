"""``jobledger launcher create|list|show|delete``: launchers over HTTP (see Launchers in docs/http-api.md).

``create`` takes the launcher's parts as options: ``--type`` (``@cron``, ``@interval``, ``@at``,
``@event``; the ``@`` may be left out), ``--arguments`` (a cron expression of five or six fields, a
duration, a time, or for ``@event`` a filter as JSON, or just an event type), ``--queue``, and
``--template`` (the job body as JSON), ``--max-pending``, ``--debounce``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from jobledger.cli.http import AsJson, UrlOption, connected, done, parse_json
from jobledger.cli.output import Cell, Output, cell

app = typer.Typer(help="Launchers: jobs created on a schedule or on events.", no_args_is_help=True)

LauncherId = Annotated[int, typer.Argument(metavar="ID", help="The launcher's id.")]
ARGUMENTS_HELP = (
    "'*/5 * * * *', '30m', an RFC 3339 time, or an event filter: "
    '\'{"type": "job_completed", "queue": "emails"}\' (or just job_completed).'
)
COLUMNS = ("id", "type", "arguments", "queue", "next_at", "fired", "skipped", "last_job", "pending")


def launcher_arguments(kind: str, text: str) -> str | dict[str, Any]:
    """``--arguments`` as the server takes them: an @event filter is JSON, or a bare event type."""
    if kind != "@event":
        return text
    if not text.lstrip().startswith("{"):
        return {"type": text.strip()}
    filter_: dict[str, Any] = parse_json(text, "--arguments")
    return filter_


@app.command()
def create(
    type_: Annotated[str, typer.Option("--type", help="@cron, @interval, @at or @event.")],
    arguments: Annotated[str, typer.Option(help=ARGUMENTS_HELP)],
    queue: Annotated[str, typer.Option(help="The queue its jobs go to.")],
    template: Annotated[
        str | None, typer.Option(metavar="JSON", help='The job body, e.g. \'{"input": {"digest": true}}\'.')
    ] = None,
    max_pending: Annotated[
        int | None, typer.Option(min=0, help="Skip a firing while this many of its jobs are live.")
    ] = None,
    debounce: Annotated[
        str | None, typer.Option(metavar="DURATION", help="@event: one job once matches stop this long.")
    ] = None,
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Create a launcher; prints its id."""
    kind = type_ if type_.startswith("@") else "@" + type_
    spec: dict[str, Any] = {"template": parse_json(template, "--template"), "max_pending": max_pending,
                            "debounce": debounce}  # fmt: skip
    given = {k: v for k, v in spec.items() if v is not None}
    with connected(url) as client:
        new_id = client.create_launcher(kind, launcher_arguments(kind, arguments), queue, **given)
    done(Output(as_json), f"created launcher [bold]{new_id}[/] ({kind} on queue {queue})", {"id": new_id})


@app.command("list")
def list_(url: UrlOption = None, as_json: AsJson = False) -> None:
    """List the launchers: what fires them, their next firing, what they fired and skipped."""
    out = Output(as_json)
    with connected(url) as client:
        launchers = client.launchers()
    if out.is_json:
        return out.json(launchers)
    out.table("launchers", COLUMNS, [[cell(found.get(c)) for c in COLUMNS] for found in launchers])


@app.command()
def show(launcher_id: LauncherId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Show every field of a launcher."""
    out = Output(as_json)
    with connected(url) as client:
        found = client.launcher(launcher_id)
    if out.is_json:
        return out.json(found)
    items: list[tuple[str, Cell]] = [(name, cell(value)) for name, value in found.items()]
    out.record(f"launcher {launcher_id}", items)


@app.command()
def delete(launcher_id: LauncherId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Stop and remove a launcher (the jobs it created stay)."""
    with connected(url) as client:
        client.delete_launcher(launcher_id)
    done(Output(as_json), f"deleted launcher [bold]{launcher_id}[/]", {"id": launcher_id, "deleted": True})
