"""Durations: parsed from human strings with pytimeparse or from seconds, held as milliseconds,
written back as compact strings ("1h15m5s", "0s")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pytimeparse import parse as _parse

_UNITS = (("w", 604_800_000), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000))

#: 100 years.  A bound keeps ``now + duration`` exact through Lua's 14-digit number encoding, so
#: what a request sets is what the projections read back.
MAX_MS = 100 * 365 * 86_400_000


def parse_ms(value: Any) -> int:
    """``"30s"``, ``"1h15m5s"``, ``"1.5h"`` or a number of seconds -> milliseconds (>= 0)."""
    if isinstance(value, bool):
        raise ValueError("a duration is a string such as '30s' or a number of seconds, not a boolean")
    if isinstance(value, (int, float)):
        seconds = value
    elif isinstance(value, str):
        parsed = _parse(value.strip())
        if parsed is None:
            raise ValueError(f"{value!r} is not a duration (examples: '30s', '1h15m5s', '3w2d', '1.5h')")
        seconds = parsed
    else:
        raise ValueError(f"a duration is a string such as '30s' or a number of seconds, not {value!r}")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {value!r}")
    if not seconds <= MAX_MS / 1000:  # compared before any float(): a huge int would overflow it; nan fails
        raise ValueError(f"a duration cannot be longer than 100 years: {value!r}")
    return round(seconds * 1000)


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
