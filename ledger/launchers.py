"""Launchers: their specs, their firing times, and the command that creates one.

A launcher creates jobs on a queue from a template: ``@cron`` (five fields, or six with seconds
first), ``@interval`` (a duration), ``@at`` (once, at a time) or ``@event`` (on events of the
ledger that match a filter).
Lua cannot run croniter, so times are computed here and passed to the scripts, which decide
(:mod:`jobledger.scheduler.launchers` runs the checks that fire and trigger them).

After downtime a launcher whose firing times passed fires once, for the first of them, and the event's
``missed`` counts the others (coalesced, not replayed as a burst); it then goes on from the first
firing time after now.  Cron expressions are in UTC, or in the launcher's ``tz`` (an IANA time zone),
with croniter's handling of daylight saving time: a time in the hour skipped in spring fires at the
first moment after the gap, and a time in the hour repeated in autumn fires in both of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    model_validator,
)

from jobledger.ledger import commands
from jobledger.ledger.calls import Call
from jobledger.ledger.durations import format_ms, format_time, parse_ms, parse_time
from jobledger.ledger.events import EVENT_TYPES, LauncherType
from jobledger.ledger.requests import Count, Duration, JobOptions, QueueName

T = TypeVar("T")

BATCH = 500
MIN_INTERVAL_MS = 1000
#: The longest cron expression taken (a list of every second and every minute is 340 characters).
MAX_CRON = 1000
#: Past this many missed firing times, catching up stops counting (``missed`` says at least this).
MAX_COUNTED = 10_000
LATEST_AT = 32_503_680_000_000  # 3000-01-01T00:00:00Z

# --- specs -----------------------------------------------------------------------------------------

_FIELDS = ("second", "minute", "hour", "day of month", "month", "day of week")
_MONTHS = "JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC"
_DAYS = "SUN|MON|TUE|WED|THU|FRI|SAT"


def _field_pattern(names: str = "", question: bool = False) -> re.Pattern[str]:
    """One cron field: ``*`` or values and ranges (numbers, or names), each with an optional
    ``/step``, separated by commas; or ``?`` alone where allowed."""
    atom = r"\d+" + (f"|{names}" if names else "")
    item = rf"(?:\*|(?:{atom})(?:-(?:{atom}))?)(?:/\d+)?"
    body = rf"{item}(?:,{item})*" + (r"|\?" if question else "")
    return re.compile(rf"^(?:{body})$", re.IGNORECASE)


_PATTERNS = (
    *(_field_pattern() for _ in range(3)),
    _field_pattern(question=True),
    _field_pattern(_MONTHS),
    _field_pattern(_DAYS, question=True),
)


def _zone(tz: str | None) -> tzinfo:
    return UTC if tz is None else ZoneInfo(tz)


def parse_tz(value: Any) -> str:
    """An IANA time zone name (``Europe/Paris``), as zoneinfo knows it."""
    try:
        if not isinstance(value, str) or not value or len(value) > 255:
            raise ValueError
        ZoneInfo(value)
    except (ValueError, ZoneInfoNotFoundError):
        raise ValueError(f"tz: {value!r} is not a time zone, e.g. 'Europe/Paris' or 'UTC'") from None
    return value


def _cron_times(expr: str, after_ms: int, tz: str | None = None) -> Iterator[int]:
    """The firing times of a (checked) expression strictly after ``after_ms``, in ms, the expression
    read in time zone ``tz`` (None: UTC)."""
    from croniter import croniter  # loaded by the first cron expression, not by every start

    start = datetime.fromtimestamp(after_ms / 1000, tz=_zone(tz))
    it = croniter(expr.replace("?", "*"), start, second_at_beginning=True)
    while True:
        yield round(it.get_next(datetime).timestamp() * 1000)


def parse_cron(value: Any) -> str:
    """A cron expression -> its six fields, seconds first, separated by single spaces.  Six fields
    are seconds first; five are the standard form, minute first, and fire at second 0 (stored as
    six: ``*/5 * * * *`` becomes ``0 */5 * * * *``).  ``* / , - ?``, names of months and days."""
    where = "arguments of a @cron launcher"
    if not isinstance(value, str):
        raise ValueError(f"{where}: a cron expression, e.g. '*/5 * * * *' or '0 */5 * * * *'")
    if len(value) > MAX_CRON:
        raise ValueError(f"{where}: a cron expression is at most {MAX_CRON} characters")
    fields = value.split()
    if len(fields) == 5:
        fields = ["0", *fields]
    elif len(fields) != 6:
        raise ValueError(
            f"{where}: {value!r} has {len(fields)} fields; a cron expression has five (minute hour "
            "day-of-month month day-of-week) or six, seconds first (second minute hour ...)"
        )
    for name, field, pattern in zip(_FIELDS, fields, _PATTERNS, strict=True):
        if not pattern.match(field):
            question = ", or ? alone" if name.startswith("day") else ""
            raise ValueError(
                f"{where}: the {name} field {field!r} is not valid: use numbers, names, * / , -{question}"
            )
    expr = " ".join(fields)
    from croniter import CroniterBadDateError, CroniterError

    try:
        next(_cron_times(expr, 0))
    except CroniterBadDateError:
        raise ValueError(f"{where}: {expr!r} names no time that ever comes") from None
    except CroniterError as exc:
        raise ValueError(f"{where}: {expr!r} is not valid: {exc}") from None
    return expr


def parse_interval(value: Any) -> str:
    """A duration of at least a second -> its compact form ("30m10s")."""
    try:
        ms = parse_ms(value)
    except ValueError as exc:
        raise ValueError(f"arguments of an @interval launcher: {exc}") from None
    if ms < MIN_INTERVAL_MS:
        raise ValueError(f"arguments of an @interval launcher: {value!r} is shorter than one second")
    return format_ms(ms)


def parse_at(value: Any) -> str:
    """An RFC 3339 time before the year 3000 -> RFC 3339 UTC with microseconds."""
    where = "arguments of an @at launcher"
    try:
        if not isinstance(value, str):
            raise ValueError
        ms = parse_time(value)
    except ValueError:
        raise ValueError(f"{where}: {value!r} is not an RFC 3339 time, e.g. 2026-11-20T18:52:42Z") from None
    if not 0 <= ms < LATEST_AT:  # times stay exact through Lua's 14-digit numbers
        raise ValueError(f"{where}: {value!r} is not between 1970 and the year 3000")
    return str(format_time(ms))


class EventFilter(BaseModel):
    """What an @event launcher waits for: an event of this type (on this queue, if named)."""

    model_config = ConfigDict(extra="forbid")

    type: StrictStr
    queue: QueueName | None = None

    @model_validator(mode="after")
    def _known_type(self) -> EventFilter:
        if self.type not in EVENT_TYPES:
            known = ", ".join(t for t in EVENT_TYPES if not t.startswith("launcher_"))
            raise ValueError(f"unknown event type {self.type!r}; known: {known}")
        if self.type.startswith("launcher_"):
            raise ValueError("a launcher cannot wait for launcher events (launchers would chain without end)")
        return self


def parse_filter(value: Any) -> dict[str, str]:
    """``{type, queue}`` -> the filter as stored (queue left out when not named)."""
    where = "arguments of an @event launcher"
    if not isinstance(value, dict):
        raise ValueError(f'{where}: an event filter such as {{"type": "job_completed", "queue": "A"}}')
    try:
        return EventFilter.model_validate(value).model_dump(exclude_none=True)
    except ValidationError as exc:
        raise ValueError(f"{where}: {'; '.join(_problem(e) for e in exc.errors())}") from None


def _problem(error: Any) -> str:
    where = ".".join(str(p) for p in error["loc"])
    message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
    message = message.removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


ARGUMENTS = {"@cron": parse_cron, "@interval": parse_interval, "@at": parse_at, "@event": parse_filter}


class LauncherSpec(BaseModel):
    """``POST /launcher`` and ``PUT /launcher/{name}``: when it fires (``type`` and ``arguments``, a
    cron expression read in time zone ``tz``), what it creates (``template``, a job body), and its
    limits.  ``arguments`` is normalized once validated."""

    model_config = ConfigDict(extra="forbid")

    type: LauncherType
    arguments: Any = None
    queue: QueueName
    template: JobOptions = Field(default_factory=JobOptions)
    max_pending: Count = 0
    debounce: Duration = 0
    tz: str | None = None

    @model_validator(mode="after")
    def _check(self) -> LauncherSpec:
        self.arguments = ARGUMENTS[self.type](self.arguments)
        if self.debounce and self.type != "@event":
            raise ValueError(f"debounce applies to @event launchers only, not {self.type}")
        if self.tz is not None:
            if self.type != "@cron":
                raise ValueError(f"tz applies to @cron launchers only, not {self.type}")
            self.tz = parse_tz(self.tz)
        if self.template.run_at is not None:
            raise ValueError("template: a launcher's jobs cannot share one run_at; give a delay instead")
        return self


# --- times -----------------------------------------------------------------------------------------


def first_at(type_: str, arguments: Any, now: int, tz: str | None = None) -> int | None:
    """When a launcher created (or resumed) at ``now`` fires first (None: only on events)."""
    if type_ == "@cron":
        return next(_cron_times(arguments, now, tz))
    if type_ == "@interval":
        return now + parse_ms(arguments)
    if type_ == "@at":
        return parse_time(arguments)
    return None


def catch_up(
    type_: str, arguments: str, due_at: int, now: int, tz: str | None = None
) -> tuple[int | None, int]:
    """For a launcher due at ``due_at`` and fired at ``now``: its next firing time (the first after
    ``now``, None when there is none) and how many firing times after ``due_at`` it missed."""
    if type_ == "@interval":
        step = parse_ms(arguments)
        missed = max(now - due_at, 0) // step
        return due_at + (missed + 1) * step, missed
    if type_ != "@cron":
        return None, 0
    from croniter import CroniterError

    try:
        times, missed = _cron_times(arguments, due_at, tz), 0
        at = next(times)
        while at <= now and missed < MAX_COUNTED:
            at, missed = next(times), missed + 1
        return (at if at > now else next(_cron_times(arguments, now, tz))), missed
    except CroniterError:  # no firing time left (e.g. a date that no longer comes)
        return None, 0


def declaration(spec: LauncherSpec) -> dict[str, Any]:
    """The declaration of a launcher as its ``launcher_created`` data holds it (no id, no next_at)."""
    data: dict[str, Any] = {
        "type": spec.type,
        "arguments": spec.arguments,
        "template": spec.template.options_json(),
        "max_pending": spec.max_pending,
        "debounce": spec.debounce,
    }
    if spec.template.input is not None:
        data["input"] = spec.template.input_text()
    if spec.tz is not None:
        data["tz"] = spec.tz
    return data


def created_data(spec: LauncherSpec, now: int) -> str:
    """The ``launcher_created`` data of a new launcher (all but its id) as JSON."""
    data = declaration(spec)
    next_at = first_at(spec.type, spec.arguments, now, spec.tz)
    if next_at is not None:
        data["next_at"] = next_at
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def create(spec: LauncherSpec, now: int) -> Call[int]:
    """The command that creates the launcher, its first firing time computed from ``now``; its id."""
    call = commands.create_launcher(spec.queue, created_data(spec, now))
    return Call(call.script, call.args, lambda reply: call.parse(reply).id, call.route)
