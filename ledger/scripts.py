"""Compose the Lua scripts and name them.

A script is: the generated prelude (every key helper from :mod:`ledger.keys`, the event versions
from :mod:`ledger.events`), the shared includes in dependency order (projection helpers, the
appliers, the apply dispatcher, the command helpers), then the entry file's body.  Each entry file
is one command.  Scripts are composed once per process and run with EVALSHA.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ledger.events import lua_versions
from ledger.keys import lua_prelude

_ROOT = Path(__file__).resolve().parent.parent
COMMANDS_DIR = _ROOT / "ledger" / "lua"
REPLAY_DIR = _ROOT / "replay" / "lua"

#: Shared pieces, each defining one local function, in the order they depend on each other.
INCLUDES = [
    "projections/lua/lib/present.lua",
    "projections/lua/lib/load_job.lua",
    "projections/lua/lib/run_deadline.lua",
    "projections/lua/lib/leave_place.lua",
    "projections/lua/lib/enter_queue.lua",
    "projections/lua/lib/enter_stopped.lua",
    "projections/lua/lib/forget_job.lua",
    "projections/lua/apply/queue_settings.lua",
    "projections/lua/apply/queue_deleted.lua",
    "projections/lua/apply/job_created.lua",
    "projections/lua/apply/job_started.lua",
    "projections/lua/apply/job_heartbeat.lua",
    "projections/lua/apply/job_output_set.lua",
    "projections/lua/apply/job_stopped.lua",
    "projections/lua/apply/job_completed.lua",
    "projections/lua/apply/job_failed.lua",
    "projections/lua/apply/job_timed_out.lua",
    "projections/lua/apply/job_cancelled.lua",
    "projections/lua/apply/job_requeued.lua",
    "projections/lua/apply/job_ended.lua",
    "projections/lua/apply/job_removed.lua",
    "projections/lua/apply.lua",
    "ledger/lua/lib/refuse.lua",
    "ledger/lua/lib/emit.lua",
    "ledger/lua/lib/require_job.lua",
    "ledger/lua/lib/require_queue.lua",
    "ledger/lua/lib/require_status.lua",
    "ledger/lua/lib/check_attempt.lua",
    "ledger/lua/lib/retry_decision.lua",
    "ledger/lua/lib/due.lua",
]


def _entry_files() -> dict[str, Path]:
    files = {p.stem: p for p in sorted(COMMANDS_DIR.glob("*.lua"))}
    files.update({p.stem: p for p in sorted(REPLAY_DIR.glob("*.lua"))})
    return files


@cache
def _shared() -> str:
    parts = [lua_prelude(), lua_versions()]
    parts += [(_ROOT / rel).read_text() for rel in INCLUDES]
    return "\n".join(parts)


@cache
def sources() -> dict[str, str]:
    """name -> complete script text, for every command and replay entry."""
    shared = _shared()
    return {name: shared + "\n" + path.read_text() for name, path in _entry_files().items()}
