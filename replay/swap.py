"""Online rebuild: new projections built beside the live ones while the server takes writes, then
swapped in (``jobledger replay rebuild --swap``).

1. The new generation (the live one + 1, see :mod:`jobledger.ledger.keys`) is folded from the ledger — the
   archive, then the stream — into ``{NS}:g<N>:`` while commands keep appending and applying to the
   live generation.
2. Catch-up rounds fold what was appended meanwhile, until less than ``tail`` events remain.
3. ``swap_generation``, one script, applies that tail and switches the ``generation`` pointer. Writes
   wait for that one call only, which applies fewer than ``tail`` events; every command after it
   resolves the new generation in its own prelude, and every read through the runner notices the
   pointer in the same MULTI it reads in, and reads again with the new keys.
4. The old generation's keys are unlinked (UNLINK frees memory off the main thread), in batches.

A rebuild interrupted before the swap leaves a partial generation that no one reads; the next one
removes it first.  Two swaps at once: the second to reach ``swap_generation`` finds the pointer
moved, drops its own generation and fails with :class:`SwapConflict`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import live_keys
from jobledger.ledger.scripts import source
from jobledger.projections.archive import ArchiveSource
from jobledger.replay.rebuild import Applier, fold

#: Catch-up rounds before giving up: writes that outpace replay would never let the tail shrink.
MAX_ROUNDS = 50


class SwapConflict(Exception):
    """Another online rebuild switched the generation first, or writes outpaced this one."""


@dataclass(frozen=True)
class Swapped:
    old: int  # the generation replaced
    new: int  # the generation now live
    events: int  # events folded into the new generation, the swap's tail included
    rounds: int  # catch-up rounds before the swap
    tail: int  # events applied by the swap itself, while writes waited
    removed: int  # keys of the old generation unlinked
    seconds: float


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def drop_generation(client: redis.Redis, keys: Keys, batch: int = 500) -> int:
    """Unlink every projection key of ``keys``' generation; how many."""
    removed, found = 0, []
    for raw in client.scan_iter(match=keys.pattern(), count=1000):
        rel = _text(raw)[len(keys.prefix) :]
        if keys.owns(rel):
            found.append(raw)
        if len(found) >= batch:
            removed += int(client.unlink(*found))
            found = []
    if found:
        removed += int(client.unlink(*found))
    return removed


def swap(
    client: redis.Redis,
    namespace: str,
    batch: int = 2000,
    tail: int = 1000,
    progress: Callable[[int], None] | None = None,
    archive: ArchiveSource | None = None,
) -> Swapped:
    """Rebuild ``namespace``'s projections as a new generation and make it the live one (its
    archived events read through ``archive``)."""
    started = time.monotonic()
    live = live_keys(client, namespace)
    target = live.with_generation(live.generation + 1)
    drop_generation(client, target)  # what an interrupted rebuild left
    applier = Applier(client, target)
    done = 0

    def report(n: int) -> None:
        if progress:
            progress(done + n)

    swapped = False
    try:
        folded = fold(client, namespace, applier, None, None, batch, report, archive)
        done, position = folded.count, folded.last_id
        script = client.register_script(source("swap_generation"))
        for rounds in range(MAX_ROUNDS):
            args: list[str | int] = [position or "", live.generation, target.generation, tail]
            status, value = (_text(v) for v in script(keys=[target.prefix, live.ledger_prefix], args=args))
            if status == "swapped":
                swapped = True
                removed = drop_generation(client, live)
                return Swapped(live.generation, target.generation, done + int(value), rounds, int(value),
                               removed, time.monotonic() - started)  # fmt: skip
            if status == "moved":
                raise SwapConflict(f"another rebuild made generation {value} live first")
            folded = fold(client, namespace, applier, position, None, batch, report, archive)
            done, position = done + folded.count, folded.last_id or position
        behind = f"over {tail} events behind after {MAX_ROUNDS} rounds"
        raise SwapConflict(f"writes outpaced the rebuild: {behind}")
    finally:
        if not swapped:  # failed or interrupted: the half-built generation goes; the live one stays
            drop_generation(client, target)
