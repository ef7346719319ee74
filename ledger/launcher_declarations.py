"""Named launchers: declared by name (``PUT /launcher/{name}``, ``[launcher.NAME]`` in the config file),
created the first time and given the new declaration after, so that declaring one again (at every
start) makes one launcher, and the same declaration appends nothing.

A launcher's name starts with a letter, so that a path segment is read without ambiguity as a
launcher's id (digits) or its name.  What a declaration is: :func:`jobledger.ledger.launchers.declaration`
plus the queue; its SHA-256 over canonical JSON (``declared``) is what the script compares.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from jobledger.ledger import commands
from jobledger.ledger.commands import Call
from jobledger.ledger.durations import parse_time
from jobledger.ledger.launchers import LauncherSpec, declaration, first_at
from jobledger.ledger.partitions import queue_route

#: A launcher's name: a letter, then up to 254 of letters, digits and ``_ . -``.
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.\-]{0,254}$"
_NAME = re.compile(NAME_PATTERN)

OUTCOMES = {0: "unchanged", 1: "created", 2: "updated"}


def check_name(name: str) -> str:
    """``name`` if it can name a launcher, else ValueError saying what one is."""
    if not _NAME.match(name):
        raise ValueError(
            f"{name[:80]!r} is not a launcher name: a letter, then letters, digits, _ . - "
            "(at most 255 characters; ids are the ledger's, names start with a letter)"
        )
    return name


def stored_arguments(spec: LauncherSpec) -> str:
    """The arguments as the launcher's hash holds them, for a schedule the script compares ('' for an
    @event filter, which is not compared)."""
    return "" if spec.type == "@event" else str(spec.arguments)


@dataclass(frozen=True)
class Declared:
    """What declaring a launcher did: its id, and ``created``, ``updated`` or ``unchanged``."""

    id: int
    outcome: str


def declared_data(name: str, spec: LauncherSpec) -> dict[str, Any]:
    """The declaration as the events carry it: with its name, its queue (in the digest only) and
    ``declared``, the SHA-256 of it all in canonical JSON."""
    data = {**declaration(spec), "name": name}
    canonical = json.dumps({**data, "queue": spec.queue}, sort_keys=True, separators=(",", ":"))
    data["declared"] = hashlib.sha256(canonical.encode()).hexdigest()
    return data


def put(name: str, spec: LauncherSpec, now: int) -> Call[Declared]:
    """The command that declares launcher ``name`` as ``spec``, a new one firing first after ``now``."""
    data = declared_data(check_name(name), spec)
    next_at = first_at(spec.type, spec.arguments, now, spec.tz)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    args = (name, spec.queue, text, "" if next_at is None else next_at, data["declared"], spec.type,
            stored_arguments(spec), spec.tz or "")  # fmt: skip
    return Call(
        "put_launcher", args, lambda r: Declared(int(r[0]), OUTCOMES[int(r[1])]), queue_route(spec.queue)
    )


def resume(launcher_id: int, kind: str, arguments: Any, tz: str | None, now: int) -> Call[bool]:
    """The command that resumes a launcher of this schedule (as its view shows it): a @cron or
    @interval launcher fires next at its first firing time after ``now``, an @at one at its time."""
    next_at = parse_time(arguments) if kind == "@at" else first_at(kind, arguments, now, tz)
    schedule = (kind, arguments if isinstance(arguments, str) else "", tz)
    return commands.resume_launcher(launcher_id, next_at, schedule)
