"""Compose the Lua scripts and name them.

A script is the generated prelude (the key helpers of :mod:`jobledger.ledger.keys` it uses, the event
versions of :mod:`jobledger.ledger.events`), the shared pieces it needs, then its entry file's body.  Each
entry file is one command (``ledger/lua``) or the replay step (``replay/lua``).

Lua builds every local function of a script again on each EVALSHA, so a script carries only what it
uses: the appliers of the event types its body emits (all of them when it calls ``apply`` itself),
and the transitive closure of the pieces those reference.  Scripts are composed once per process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jobledger.ledger.events import EVENT_TYPES, lua_versions
from jobledger.ledger.keys import lua_prelude
from jobledger.projections.appliers import APPLIERS

_ROOT = Path(__file__).resolve().parent.parent
ENTRY_DIRS = (_ROOT / "ledger" / "lua", _ROOT / "replay" / "lua")

#: Shared pieces, each defining one local function, in the order they depend on each other.
INCLUDES = [
    "projections/lua/lib/present.lua",
    "projections/lua/lib/load_job.lua",
    "projections/lua/lib/set_fields.lua",
    "projections/lua/lib/run_deadline.lua",
    "projections/lua/lib/refresh_head.lua",
    "projections/lua/lib/count_running_key.lua",
    "projections/lua/lib/leave_queue.lua",
    "projections/lua/lib/leave_place.lua",
    "projections/lua/lib/enter_queue.lua",
    "projections/lua/lib/release_unique.lua",
    "projections/lua/lib/track_pending.lua",
    "projections/lua/lib/launcher_next.lua",
    "projections/lua/lib/enter_stopped.lua",
    "projections/lua/lib/with_error.lua",
    "projections/lua/lib/forget_job.lua",
    "projections/lua/apply/queue_settings.lua",
    "projections/lua/apply/queue_deleted.lua",
    "projections/lua/apply/queue_paused.lua",
    "projections/lua/apply/queue_resumed.lua",
    "projections/lua/apply/job_created.lua",
    "projections/lua/apply/job_released.lua",
    "projections/lua/apply/job_started.lua",
    "projections/lua/apply/job_heartbeat.lua",
    "projections/lua/apply/job_progressed.lua",
    "projections/lua/apply/job_output_set.lua",
    "projections/lua/apply/job_stopped.lua",
    "projections/lua/apply/job_completed.lua",
    "projections/lua/apply/job_failed.lua",
    "projections/lua/apply/job_timed_out.lua",
    "projections/lua/apply/job_cancelled.lua",
    "projections/lua/apply/job_requeued.lua",
    "projections/lua/apply/job_returned.lua",
    "projections/lua/apply/job_ended.lua",
    "projections/lua/apply/job_removed.lua",
    "projections/lua/apply/launcher_created.lua",
    "projections/lua/apply/launcher_deleted.lua",
    "projections/lua/apply/launcher_fired.lua",
    "projections/lua/apply/launcher_skipped.lua",
    "projections/lua/apply/launcher_triggered.lua",
    "projections/lua/apply.lua",
    "ledger/lua/lib/refuse.lua",
    "ledger/lua/lib/emit.lua",
    "ledger/lua/lib/require_job.lua",
    "ledger/lua/lib/load_queue.lua",
    "ledger/lua/lib/require_queue.lua",
    "ledger/lua/lib/require_status.lua",
    "ledger/lua/lib/check_attempt.lua",
    "ledger/lua/lib/retry_decision.lua",
    "ledger/lua/lib/due.lua",
    "ledger/lua/lib/new_job.lua",
    "ledger/lua/lib/load_launcher.lua",
    "ledger/lua/lib/newer_id.lua",
    "ledger/lua/lib/event_matches.lua",
    "ledger/lua/lib/launch.lua",
    "ledger/lua/lib/update.lua",
]

_DEFINES = re.compile(r"^local function (\w+)", re.MULTILINE)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_EMITS = re.compile(r"\bemit\(\s*[^,]+,\s*'(\w+)'")
_KEY_USE = re.compile(r"\bK\.(\w+)")


@dataclass(frozen=True)
class Piece:
    name: str  # the local function it defines
    text: str


@cache
def _pieces() -> list[Piece]:
    pieces = []
    for rel in INCLUDES:
        text = (_ROOT / rel).read_text()
        match = _DEFINES.search(text)
        if not match:
            raise ValueError(f"{rel} defines no local function")
        pieces.append(Piece(match.group(1), text))
    return pieces


def _applier_table(types: list[str]) -> str:
    pairs = ",\n".join(f"  {t} = {APPLIERS[t]}" for t in types)
    return "local APPLY = {\n" + pairs + "\n}\n"


def _event_types(body: str, reached: str) -> list[str]:
    """The event types a script can emit: those its reached code names in emit(); every type when
    its entry body calls ``apply`` itself (replay)."""
    if re.search(r"\bapply\(", body):
        return list(EVENT_TYPES)
    return sorted(set(_EMITS.findall(reached)))


def _needed(body: str, types: list[str]) -> set[str]:
    """Names of the pieces the body and its appliers reach, transitively."""
    names = {p.name for p in _pieces()}
    texts = {p.name: p.text for p in _pieces()}
    todo = set(_WORD.findall(body)) & names | {APPLIERS[t] for t in types}
    if types:
        todo.add("apply")
    needed: set[str] = set()
    while todo:
        name = todo.pop()
        needed.add(name)
        todo |= (set(_WORD.findall(texts[name])) & names) - needed
    return needed


def compose(body: str) -> str:
    """The complete script for an entry body."""
    texts = {p.name: p.text for p in _pieces()}
    reached = "\n".join([body, *(texts[name] for name in _needed(body, []))])
    types = _event_types(body, reached)
    needed = _needed(body, types)
    parts = []
    for piece in _pieces():
        if piece.name in needed:
            if piece.name == "apply":
                parts.append(_applier_table(types))
            parts.append(piece.text)
    code = "\n".join([*parts, body])
    return lua_prelude(set(_KEY_USE.findall(code))) + lua_versions() + code


@cache
def sources() -> dict[str, str]:
    """name -> complete script text, for every command and replay entry."""
    entries = {p.stem: p for d in ENTRY_DIRS for p in sorted(d.glob("*.lua"))}
    return {name: compose(path.read_text()) for name, path in entries.items()}
