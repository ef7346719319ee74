"""``jobledger launcher put|create|list|show|pause|resume|fire|delete``: launchers over HTTP (see
Launchers in docs/http-api.md).

``put NAME`` declares a named launcher (created, or given the new declaration), ``create`` makes an
unnamed one; both take the launcher's parts as options: ``--type`` (``@cron``, ``@interval``, ``@at``,
``@event``; the ``@`` may be left out), ``--arguments`` (a cron expression of five or six fields, a
duration, a time, or for ``@event`` a filter as JSON, or just an event type), ``--queue``, and
``--template`` (the job body as JSON), ``--max-pending``, ``--debounce``, ``--tz``.  The other
commands name a launcher by its id or its name.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from jobledger.cli.http import AsJson, UrlOption, connected, done, parse_json
from jobledger.cli.output import Cell, Output, cell

app = typer.Typer(help="Launchers: jobs created on a schedule or on events.", no_args_is_help=True)

LauncherId = Annotated[str, typer.Argument(metavar="ID|NAME", help="The launcher's id or name.")]
ARGUMENTS_HELP = (
    "'*/5 * * * *', '30m', an RFC 3339 time, or an event filter: "
    '\'{"type": "job_completed", "queue": "emails"}\' (or just job_completed).'
)
COLUMNS = ("id", "name", "type", "arguments", "queue", "next_at", "paused", "held", "fired", "skipped",
           "last_job", "pending")  # fmt: skip


def _launcher(raw: str) -> int | str:
    """A launcher named on the command line: its id (digits) or its name."""
    return int(raw) if raw.isdigit() else raw


def launcher_arguments(kind: str, text: str) -> str | dict[str, Any]:
    """``--arguments`` as the server takes them: an @event filter is JSON, or a bare event type."""
    if kind != "@event":
        return text
    if not text.lstrip().startswith("{"):
        return {"type": text.strip()}
    filter_: dict[str, Any] = parse_json(text, "--arguments")
    return filter_


TypeOption = Annotated[str, typer.Option("--type", help="@cron, @interval, @at or @event.")]
ArgumentsOption = Annotated[str, typer.Option(help=ARGUMENTS_HELP)]
QueueOption = Annotated[str, typer.Option(help="The queue its jobs go to.")]
TemplateOption = Annotated[
    str | None, typer.Option(metavar="JSON", help='The job body, e.g. \'{"input": {"digest": true}}\'.')
]
MaxPendingOption = Annotated[
    int | None, typer.Option(min=0, help="Skip a firing while this many of its jobs are live.")
]
DebounceOption = Annotated[
    str | None, typer.Option(metavar="DURATION", help="@event: one job once matches stop this long.")
]
TzOption = Annotated[
    str | None, typer.Option(metavar="ZONE", help="@cron: the time zone it is read in, e.g. Europe/Paris.")
]


def _kind_and_spec(
    type_: str, template: str | None, max_pending: int | None, debounce: str | None, tz: str | None
) -> tuple[str, dict[str, Any]]:
    """The launcher type with its ``@``, and the options given, as the server takes them."""
    kind = type_ if type_.startswith("@") else "@" + type_
    spec: dict[str, Any] = {"template": parse_json(template, "--template"), "max_pending": max_pending,
                            "debounce": debounce, "tz": tz}  # fmt: skip
    return kind, {k: v for k, v in spec.items() if v is not None}


@app.command()
def put(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="Its name: a letter, then letters, digits, _ . -")
    ],
    type_: TypeOption,
    arguments: ArgumentsOption,
    queue: QueueOption,
    template: TemplateOption = None,
    max_pending: MaxPendingOption = None,
    debounce: DebounceOption = None,
    tz: TzOption = None,
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Declare a named launcher: create it, or give it this declaration (the same one again changes
    nothing)."""
    kind, given = _kind_and_spec(type_, template, max_pending, debounce, tz)
    with connected(url) as client:
        got = client.put_launcher(name, kind, launcher_arguments(kind, arguments), queue, **given)
    text = (
        f"{got['outcome']} launcher [bold]{escape(name)}[/] (id {got['id']}, {kind} on queue {escape(queue)})"
    )
    done(Output(as_json), text, got)


@app.command()
def create(
    type_: TypeOption,
    arguments: ArgumentsOption,
    queue: QueueOption,
    template: TemplateOption = None,
    max_pending: MaxPendingOption = None,
    debounce: DebounceOption = None,
    tz: TzOption = None,
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Create an unnamed launcher; prints its id."""
    kind, given = _kind_and_spec(type_, template, max_pending, debounce, tz)
    with connected(url) as client:
        new_id = client.create_launcher(kind, launcher_arguments(kind, arguments), queue, **given)
    done(
        Output(as_json),
        f"created launcher [bold]{new_id}[/] ({kind} on queue {escape(queue)})",
        {"id": new_id},
    )


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
def show(launcher: LauncherId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Show every field of a launcher."""
    out = Output(as_json)
    with connected(url) as client:
        found = client.launcher(_launcher(launcher))
    if out.is_json:
        return out.json(found)
    items: list[tuple[str, Cell]] = [(name, cell(value)) for name, value in found.items()]
    out.record(f"launcher {launcher}", items)


def _act(launcher: str, url: str | None, as_json: bool, verb: str, result: dict[str, Any]) -> None:
    """Run ``client.<verb>_launcher`` on the launcher named on the command line and say so."""
    named = _launcher(launcher)
    with connected(url) as client:
        getattr(client, f"{verb}_launcher")(named)
    done(Output(as_json), f"{verb}d launcher [bold]{escape(launcher)}[/]", {"id": named, **result})


@app.command()
def pause(launcher: LauncherId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Pause a launcher: it fires no more (and matches no event) until resumed."""
    _act(launcher, url, as_json, "pause", {"paused": True})


@app.command()
def resume(launcher: LauncherId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Resume a launcher: it fires again from its next firing time after now."""
    _act(launcher, url, as_json, "resume", {"paused": False})


@app.command()
def fire(launcher: LauncherId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Fire a launcher now, by hand (its schedule stays as it was); prints the new job's id."""
    with connected(url) as client:
        job_id = client.fire_launcher(_launcher(launcher))
    sentence = f"fired launcher [bold]{escape(launcher)}[/]: job [bold]{job_id}[/]"
    done(Output(as_json), sentence, {"id": job_id, "launcher": _launcher(launcher)})


@app.command()
def delete(launcher: LauncherId, url: UrlOption = None, as_json: AsJson = False) -> None:
    """Stop and remove a launcher (the jobs it created stay)."""
    _act(launcher, url, as_json, "delete", {"deleted": True})
