"""Where a job's history (the ids of its events, oldest first) is kept, and reading it back.

While it is short it is inline in the job's hash, field ``h``: the ids separated by spaces, the first
as it is (``<ms>-<seq>``) and each later one as its milliseconds after the one before it.  Short,
it keeps the hash in Redis's compact encoding, where a key of its own would cost more than the rest
of an ended job.  A history that outgrows it, the history of a job whose hash is gone (deleted or
expired: the history outlives the job) and that of a job created before histories were kept inline
are in the list ``history:{id}`` instead (``projections/lua/lib/record_history.lua`` writes both).
"""

from __future__ import annotations

from typing import Any

from jobledger.ledger.keys import Keys

#: The job hash's field holding its inline history.
INLINE_FIELD = "h"


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def commands(keys: Keys, job_id: int | str) -> list[tuple[Any, ...]]:
    """The two reads whose replies :func:`ids` turns into the job's event ids."""
    return [("HGET", keys.job(job_id), INLINE_FIELD), ("LRANGE", keys.history(job_id), 0, -1)]


def inline_ids(text: str) -> list[str]:
    """The event ids of an inline history."""
    out: list[str] = []
    ms = 0
    for step in text.split():
        delta, seq = step.split("-")
        ms += int(delta)
        out.append(f"{ms}-{seq}")
    return out


def ids(replies: list[Any]) -> list[str]:
    """The job's event ids, oldest first, from the replies of :func:`commands` (empty: none)."""
    inline, listed = replies[0], replies[1]
    return [_s(i) for i in listed] + (inline_ids(_s(inline)) if inline else [])
