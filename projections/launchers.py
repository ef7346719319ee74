"""Typed readers and views of the launcher projections: a launcher as the API shows it, the list of
launchers, and what the scheduler's launcher checks read (the launchers due, the @event launchers,
a page of the stream)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jobledger.ledger.durations import format_ms, format_time
from jobledger.ledger.errors import NotFound
from jobledger.ledger.keys import Keys
from jobledger.ledger.option_kinds import shown
from jobledger.ledger.partitions import id_route, spread
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import score_pairs
from jobledger.ledger.requests import JobOptions
from jobledger.projections.views import decode_hash


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _time(raw: str | None) -> str | None:
    return format_time(int(raw)) if raw is not None else None


def template_view(options_json: str, input_json: str | None) -> dict[str, Any]:
    """A stored template as a job body again: durations compact, input decoded."""
    body = shown(JobOptions, json.loads(options_json))
    if input_json is not None:
        body["input"] = json.loads(input_json)
    return body


def launcher_view(launcher_id: int, h: dict[str, str], pending: int) -> dict[str, Any]:
    """The launcher as the API shows it: times RFC 3339, durations compact, JSON decoded."""
    kind = h["type"]
    return {
        "id": launcher_id,
        "type": kind,
        "arguments": json.loads(h["arguments"]) if kind == "@event" else h["arguments"],
        "queue": h["queue"],
        "template": template_view(h["template"], h.get("input")),
        "max_pending": int(h.get("max_pending", 0)),
        "debounce": format_ms(int(h.get("debounce", 0))),
        "created_at": _time(h.get("created_at")),
        "next_at": _time(h.get("next_at")),
        "fired": int(h.get("fired", 0)),
        "skipped": int(h.get("skipped", 0)),
        "last_fired_at": _time(h.get("last_fired_at")),
        "last_job": int(h["last_job"]) if "last_job" in h else None,
        "pending": pending,
    }


def launcher(launcher_id: int) -> Read[dict[str, Any]]:
    """The launcher, or NotFound."""

    def parse(r: list[Any]) -> dict[str, Any]:
        if not r[0]:
            raise NotFound(f"launcher {launcher_id} does not exist")
        return launcher_view(launcher_id, decode_hash(r[0]), int(r[1]))

    return Read(
        lambda k: [("HGETALL", k.build("launcher", id=launcher_id)),
                   ("SCARD", k.build("launcher_pending", id=launcher_id))],
        parse,
        id_route(launcher_id),
    )  # fmt: skip


def launchers() -> Read[list[dict[str, Any]]]:
    """Every launcher, by id."""

    def each(ids: list[int]) -> Read[list[dict[str, Any]]]:
        def commands(k: Keys) -> list[tuple[Any, ...]]:
            out: list[tuple[Any, ...]] = []
            for i in ids:
                out += [("HGETALL", k.build("launcher", id=i)), ("SCARD", k.build("launcher_pending", id=i))]
            return out

        def parse(r: list[Any]) -> list[dict[str, Any]]:
            pairs = zip(ids, r[0::2], r[1::2], strict=True)
            return [launcher_view(i, decode_hash(h), int(n)) for i, h, n in pairs if h]

        return Read(commands, parse)

    return Read(
        lambda k: [("SMEMBERS", k.build("launchers"))],
        lambda r: each(sorted(int(_s(i)) for i in r[0])),
        spread(lambda parts: sorted((x for part in parts for x in part), key=lambda x: x["id"])),
    )


@dataclass(frozen=True)
class DueLauncher:
    """A launcher whose firing time ``due_at`` has come, with what its next time is computed from."""

    id: int
    type: str
    arguments: str
    due_at: int


def due_launchers(now: int, limit: int) -> Read[list[DueLauncher]]:
    """Up to ``limit`` launchers due by ``now``, earliest first."""

    def specs(due: list[tuple[int, int]]) -> Read[list[DueLauncher]]:
        def parse(r: list[Any]) -> list[DueLauncher]:
            return [DueLauncher(i, _s(t), _s(a), at) for (i, at), (t, a) in zip(due, r, strict=True) if t]

        return Read(
            lambda k: [("HMGET", k.build("launcher", id=i), "type", "arguments") for i, _ in due], parse
        )

    def parse(r: list[Any]) -> Read[list[DueLauncher]] | list[DueLauncher]:
        due = [(int(_s(i)), int(score)) for i, score in score_pairs(r[0])]
        return specs(due) if due else []

    return Read(
        lambda k: [
            ("ZRANGE", k.build("due_launch"), "-inf", now, "BYSCORE", "LIMIT", 0, limit, "WITHSCORES")
        ],
        parse,
    )


@dataclass(frozen=True)
class EventLauncher:
    """An @event launcher: its filter ``{type, queue}``, the last event it acted on in its own
    partition's stream, when it was made, and, on a ledger split into partitions, the last event it
    acted on in each other partition's stream that has had one."""

    id: int
    filter: dict[str, str]
    last_trigger: str
    created_at: int = 0
    triggers: dict[int, str] = field(default_factory=dict)


def event_launchers(partitions: int = 1) -> Read[list[EventLauncher]]:
    """The @event launchers (of a partition of a ledger split into ``partitions``)."""
    fields = ["arguments", "last_trigger", "created_at", *(f"last_trigger:{p}" for p in range(partitions))]
    fields = fields if partitions > 1 else fields[:2]

    def launcher(i: int, r: list[Any]) -> EventLauncher:
        triggers = {p: _s(t) for p, t in enumerate(r[3:]) if t is not None}
        created = int(_s(r[2])) if len(r) > 2 and r[2] is not None else 0
        return EventLauncher(i, json.loads(_s(r[0])), _s(r[1]), created, triggers)

    def each(ids: list[int]) -> Read[list[EventLauncher]]:
        def parse(r: list[Any]) -> list[EventLauncher]:
            return [launcher(i, got) for i, got in zip(ids, r, strict=True) if got[0]]

        return Read(lambda k: [("HMGET", k.build("launcher", id=i), *fields) for i in ids], parse)

    def parse(r: list[Any]) -> Read[list[EventLauncher]] | list[EventLauncher]:
        ids = sorted(int(_s(i)) for i in r[0])
        return each(ids) if ids else []

    return Read(lambda k: [("SMEMBERS", k.build("event_launchers"))], parse)


def stream_page(after: str, until: str, count: int) -> Read[list[tuple[str, dict[str, str]]]]:
    """Up to ``count`` entries of the stream after ``after`` (exclusive) up to ``until`` (inclusive),
    as text."""

    def parse(r: list[Any]) -> list[tuple[str, dict[str, str]]]:
        return [(_s(i), decode_hash(fields)) for i, fields in r[0]]

    return Read(lambda k: [("XRANGE", k.events, "(" + after, until, "COUNT", count)], parse)


def before_time(at: int) -> Read[str]:
    """The id of an entry of the stream before every entry whose ``at`` is ``at`` or later ("0-0"
    when none is): where a reading of the events from that time on starts, exclusive.  As ``at``
    never decreases along the stream, a search over the ids' times finds it, one entry read per
    step."""

    def probe(low: int, high: int) -> Read[str]:
        """The first entry whose ``at`` is late enough lies in ids ``low-0`` up to ``high-0``."""
        if high - low <= 1:
            return Read(lambda k: [("XREVRANGE", k.events, f"({low}-0", "-", "COUNT", 1)],
                        lambda r: _s(r[0][0][0]) if r[0] else "0-0")  # fmt: skip
        middle = (low + high) // 2

        def parse(r: list[Any]) -> Read[str]:
            late = not r[0] or int(_s(decode_hash(r[0][0][1]).get("at", "0"))) >= at
            return probe(low, middle) if late else probe(middle, high)

        return Read(lambda k: [("XRANGE", k.events, f"{middle}-0", "+", "COUNT", 1)], parse)

    def ends(r: list[Any]) -> Read[str] | str:
        if not r[0] or not r[1]:
            return "0-0"
        first, last = (int(_s(r[i][0][0]).split("-")[0]) for i in (0, 1))
        return probe(first, last + 1)

    return Read(lambda k: [("XRANGE", k.events, "-", "+", "COUNT", 1),
                           ("XREVRANGE", k.events, "+", "-", "COUNT", 1)], ends)  # fmt: skip
