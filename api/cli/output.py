"""How the command line prints: rich tables and colours on a terminal, tab-separated plain text
when piped, JSON with ``--json``.

Whether stdout is a terminal is rich's decision (``isatty``, and the ``TTY_COMPATIBLE`` /
``FORCE_COLOR`` / ``NO_COLOR`` variables), so the usual switches work.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from jobledger.ledger.durations import format_ms
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.option_kinds import named
from jobledger.ledger.requests import JobOptions, QueueSettings

JsonOption = typer.Option("--json", help="Print JSON (the default when piped is plain text).")

STATUS_STYLES = {
    "queued": "cyan",
    "scheduled": "blue",
    "running": "yellow",
    "completed": "green",
    "failed": "red",
    "timed_out": "red",
    "cancelled": "magenta",
}
EVENT_STYLES = {
    "job_created": "cyan",
    "job_started": "yellow",
    "job_heartbeat": "dim",
    "job_output_set": "dim",
    "job_completed": "green",
    "job_failed": "red",
    "job_timed_out": "red",
    "job_cancelled": "magenta",
    "job_requeued": "blue",
    "job_expired": "dim",
    "job_deleted": "dim",
    "job_ended": "magenta",
    "job_returned": "blue",
    "launcher_fired": "cyan",
    "launcher_skipped": "dim",
}
#: Event data fields that hold a duration in milliseconds (or a list of them), as the models of what
#: the events record declare them, and a time in milliseconds since the epoch.
DURATION_FIELDS = frozenset(
    name
    for model in (QueueSettings, JobOptions, LauncherSpec)
    for name in named(model, "duration", "durations")
)
TIME_FIELDS = frozenset({"retry_at", "next_at", "due_at", *named(JobOptions, "time")})
#: User JSON in event data (a job's input and output, a launcher's template): shown this long at most.
JSON_WIDTH = 60


@dataclass(frozen=True)
class Cell:
    """One value to print, and its style on a terminal."""

    text: str
    style: str = ""


def cell(value: Any, style: str = "") -> Cell:
    """A value as text: None is empty, strings as they are, anything else as compact JSON."""
    if value is None:
        return Cell("", style)
    if isinstance(value, str):
        return Cell(value, style)
    return Cell(json.dumps(value, separators=(",", ":"), ensure_ascii=False), style)


def status_cell(status: str | None) -> Cell:
    return cell(status, STATUS_STYLES.get(status or "", ""))


class Output:
    """Where a command prints, in the mode chosen once at its start."""

    def __init__(self, as_json: bool) -> None:
        self.console = Console(highlight=False, soft_wrap=False)
        self.mode: Literal["json", "rich", "plain"] = (
            "json" if as_json else "rich" if self.console.is_terminal else "plain"
        )

    @property
    def is_json(self) -> bool:
        return self.mode == "json"

    def json(self, value: Any) -> None:
        typer.echo(json.dumps(value, indent=2, ensure_ascii=False))

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
        """Rows under a header: a rich table, or tab-separated lines with the header first."""
        if self.mode == "rich":
            table = Table(*columns, title=title, title_justify="left", header_style="bold")
            for row in rows:
                table.add_row(*(Text(c.text, style=c.style) for c in row))
            self.console.print(table)
        else:
            self._lines([list(columns), *([c.text for c in row] for row in rows)])

    def record(self, title: str, items: Sequence[tuple[str, Cell]]) -> None:
        """Named values: a two-column rich grid under a title, or ``name<TAB>value`` lines."""
        if self.mode == "rich":
            grid = Table(title=title, title_justify="left", show_header=False, title_style="bold")
            grid.add_column(style="bold")
            grid.add_column()
            for name, value in items:
                grid.add_row(name, Text(value.text, style=value.style))
            self.console.print(grid)
        else:
            self._lines([[name, value.text] for name, value in items])

    def note(self, rich_text: str, plain_text: str) -> None:
        """A sentence on a terminal (rich markup allowed), the bare value when piped."""
        if self.mode == "rich":
            self.console.print(rich_text)
        else:
            typer.echo(plain_text)

    def _lines(self, rows: Sequence[Sequence[str]]) -> None:
        for row in rows:
            typer.echo("\t".join(_one_line(text) for text in row))


def _one_line(text: str) -> str:
    """Keep each value on its line and in its column when piped."""
    return text.replace("\t", " ").replace("\n", " ")


def when(at: datetime, plain: bool) -> str:
    """RFC 3339 UTC when piped; on a terminal, the local time to the millisecond."""
    if plain:
        return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    local = at.astimezone()
    return local.strftime("%Y-%m-%d %H:%M:%S.") + f"{local.microsecond // 1000:03d}"


def when_ms(ms: int, plain: bool) -> str:
    """A time in milliseconds since the epoch, as :func:`when` shows it."""
    return when(datetime.fromtimestamp(ms / 1000, tz=UTC), plain)


def event_details(data: dict[str, Any], plain: bool) -> str:
    """An event's data as ``name=value`` words: durations compact (``2m15s``), times as
    :func:`when` shows them, errors as ``kind: message`` (quoted when they hold a space), user JSON
    compact and cut short; true flags bare (``ended``); what is empty or zero (an unset duration, a
    default priority) left out, but a progress of 0."""
    words = []
    for name, value in data.items():
        if value is None or value is False or value in ([], {}, "") or (value == 0 and name != "progress"):
            continue
        words.append(name if value is True else f"{name}={_detail(name, value, plain)}")
    return " ".join(words)


def _detail(name: str, value: Any, plain: bool) -> str:
    if name in DURATION_FIELDS and isinstance(value, int):
        return format_ms(value)
    if name in DURATION_FIELDS and isinstance(value, list):
        return ",".join(format_ms(v) for v in value)
    if name in TIME_FIELDS and isinstance(value, int):
        return _quoted(when_ms(value, plain))
    if name == "retry_backoff" and isinstance(value, dict):
        return f"{format_ms(value['base'])}*{value['factor']:g}^n<={format_ms(value['max'])}"
    if name == "error" and isinstance(value, dict):
        return _quoted(": ".join(str(value[k]) for k in ("kind", "message") if value.get(k)))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _quoted(",".join(value))
    if isinstance(value, str):
        return _quoted(value)
    text = _one_line(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    return text if len(text) <= JSON_WIDTH else text[: JSON_WIDTH - 1] + "…"


def _quoted(text: str) -> str:
    """Text on one line, quoted when it holds a space or a quote, so that the words stay apart."""
    text = _one_line(text)
    return json.dumps(text, ensure_ascii=False) if any(c in text for c in ' "') else text
