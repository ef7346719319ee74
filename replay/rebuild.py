"""Rebuild every projection of a ledger from its stream alone, into an empty namespace.

Rebuilding is a fold over events: read the stream in order, in batches, and hand each batch to the
``apply_events`` script, which calls the same ``apply`` the live commands call.  Events written at
an older schema version are upcast to the current one first, so ``apply`` only knows current data.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import redis

from ledger.events import EVENT_TYPES, upcast
from ledger.keys import Keys
from ledger.scripts import sources

Progress = Callable[[int], None]


class NamespaceNotEmpty(Exception):
    """Rebuilding into a namespace that already holds keys would mix two states."""


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _current(fields: dict[str, str]) -> str:
    """The event's data at the current version of its type (unchanged text when already current)."""
    type_, version = fields["type"], int(fields.get("v", "1"))
    if version == EVENT_TYPES[type_].version:
        return fields.get("data", "{}")
    return json.dumps(upcast(type_, version, json.loads(fields.get("data") or "{}")), separators=(",", ":"))


def _flatten(entries: list[tuple[Any, dict[Any, Any]]]) -> list[str]:
    args: list[str] = []
    for entry_id, raw in entries:
        f = {_s(k): _s(v) for k, v in raw.items()}
        args += [_s(entry_id), f["type"], f["at"], f.get("job", ""), f.get("queue", ""), _current(f)]
    return args


def read_stream(
    client: redis.Redis, stream: str, until: str | None = None, batch: int = 2000
) -> Iterator[list[tuple[Any, dict[Any, Any]]]]:
    """The stream's entries in order, ``batch`` at a time, up to and including id ``until``."""
    start = "-"
    end = until or "+"
    while True:
        entries: list[tuple[Any, dict[Any, Any]]] = client.xrange(stream, start, end, count=batch)  # type: ignore[assignment]
        if not entries:
            return
        yield entries
        if len(entries) < batch:
            return
        start = "(" + _s(entries[-1][0])


def ensure_empty(client: redis.Redis, keys: Keys) -> None:
    for _ in client.scan_iter(match=keys.pattern(), count=1000):
        raise NamespaceNotEmpty(f"namespace '{keys.namespace}' is not empty; rebuild needs an empty one")


def rebuild(
    client: redis.Redis,
    source: str,
    target: str,
    until: str | None = None,
    batch: int = 2000,
    progress: Progress | None = None,
) -> int:
    """Apply every event of ``source``'s stream (up to ``until``) to the empty namespace ``target``.

    Returns the number of events applied.  The target receives projections only, no stream.
    """
    src, dst = Keys(source), Keys(target)
    ensure_empty(client, dst)
    script = client.register_script(sources()["apply_events"])
    done = 0
    for entries in read_stream(client, src.events, until, batch):
        script(keys=[dst.prefix], args=_flatten(entries))
        done += len(entries)
        if progress:
            progress(done)
    return done
