"""Durations: parsed as Ocypod parses them (humantime's units, ``"M"`` a month and ``"m"`` a minute)
or, for forms humantime does not know, with pytimeparse, or from a number of seconds; held as
milliseconds, written back as compact strings ("1h15m5s", "0s")."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

_UNITS = (("w", 604_800_000), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000))

_SECOND_NS = 1_000_000_000
#: humantime's units, case-sensitive, in nanoseconds: a month is 30.44 days and a year 365.25
#: days, exactly as humantime defines them (2,630,016 s and 31,557,600 s).
HUMANTIME_NS: dict[str, int] = {
    **dict.fromkeys(("nanos", "nsec", "ns"), 1),
    **dict.fromkeys(("usec", "us", "µs"), 1_000),
    **dict.fromkeys(("millis", "msec", "ms"), 1_000_000),
    **dict.fromkeys(("seconds", "second", "secs", "sec", "s"), _SECOND_NS),
    **dict.fromkeys(("minutes", "minute", "mins", "min", "m"), 60 * _SECOND_NS),
    **dict.fromkeys(("hours", "hour", "hrs", "hr", "h"), 3_600 * _SECOND_NS),
    **dict.fromkeys(("days", "day", "d"), 86_400 * _SECOND_NS),
    **dict.fromkeys(("weeks", "week", "wks", "wk", "w"), 604_800 * _SECOND_NS),
    **dict.fromkeys(("months", "month", "M"), 2_630_016 * _SECOND_NS),
    **dict.fromkeys(("years", "year", "yrs", "yr", "y"), 31_557_600 * _SECOND_NS),
}
_SPAN = r"(\d+(?:\.\d+)?)\s*([A-Za-zµ]+)"
_SPANS = re.compile(rf"\s*(?:{_SPAN}\s*)+")
_ONE_SPAN = re.compile(_SPAN)
#: "M" standing alone as a unit: a month for humantime, a minute for pytimeparse (case-blind)
_MONTH_UNIT = re.compile(r"(?<![A-Za-z])M(?![A-Za-z])")
_EXAMPLES = "examples: '30s', '1h15m5s', '2m 15s', '3w2d', '1.5h', '500ms', '1M' (a month)"

#: 100 years.  A bound keeps ``now + duration`` exact through Lua's 14-digit number encoding, so
#: what a request sets is what the projections read back.
MAX_MS = 100 * 365 * 86_400_000


def _humantime_ms(text: str) -> int | None:
    """Milliseconds if every span of ``text`` is a number and one of humantime's units, else None.
    Below a millisecond rounds up, so that a positive duration never becomes 0 (which means off)."""
    if not _SPANS.fullmatch(text):
        return None
    from decimal import Decimal  # with the first duration read: a server's start reads none

    total = Decimal(0)
    for number, unit in _ONE_SPAN.findall(text):
        if unit not in HUMANTIME_NS:
            return None
        total += Decimal(number) * HUMANTIME_NS[unit]
    return math.ceil(total / 1_000_000)


def _text_ms(text: str) -> int:
    """A duration string as milliseconds: humantime's reading first, then pytimeparse's extra forms
    ("1:30", "1 minute, 24 secs", "1.5 hrs") where they cannot be read two ways."""
    ms = _humantime_ms(text)
    if ms is not None:
        return ms
    if _MONTH_UNIT.search(text):
        raise ValueError(f"{text!r} is ambiguous: 'M' is a month (as in Ocypod), not a minute; {_EXAMPLES}")
    from pytimeparse import parse  # its forms are the rare ones

    seconds = parse(text.strip())
    if seconds is None:
        raise ValueError(f"{text!r} is not a duration ({_EXAMPLES})")
    return _seconds_ms(seconds, text)


def _seconds_ms(seconds: float, given: object) -> int:
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {given!r}")
    if not seconds <= MAX_MS / 1000:  # compared before any float(): a huge int would overflow it; nan fails
        raise ValueError(f"a duration cannot be longer than 100 years: {given!r}")
    return round(seconds * 1000)


def parse_ms(value: Any) -> int:
    """``"30s"``, ``"2m 15s"``, ``"1M"`` (a month), ``"1.5h"`` or a number of seconds -> milliseconds."""
    if isinstance(value, bool):
        raise ValueError("a duration is a string such as '30s' or a number of seconds, not a boolean")
    if isinstance(value, (int, float)):
        return _seconds_ms(value, value)
    if not isinstance(value, str):
        raise ValueError(f"a duration is a string such as '30s' or a number of seconds, not {value!r}")
    ms = _text_ms(value)
    if ms > MAX_MS:
        raise ValueError(f"a duration cannot be longer than 100 years: {value!r}")
    return ms


def format_ms(ms: int) -> str:
    """Milliseconds -> the compact form: ``"1h15m5s"``, ``"2w3d"``, ``"1.5s"``, ``"0s"``."""
    if ms <= 0:
        return "0s"
    out = []
    for unit, size in _UNITS:
        count, ms = divmod(ms, size)
        if count:
            out.append(f"{count}{unit}")
    if ms:
        seconds, millis = divmod(ms, 1000)
        out.append(f"{seconds}.{millis:03d}".rstrip("0") + "s" if millis else f"{seconds}s")
    return "".join(out)


def format_time(ms: int | None) -> str | None:
    """Milliseconds since the epoch -> RFC 3339 UTC with microseconds (``2026-11-20T18:52:42.700000Z``)."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> int:
    """RFC 3339 / ISO 8601 text -> milliseconds since the epoch (naive times are taken as UTC)."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
