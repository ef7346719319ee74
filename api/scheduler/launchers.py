"""The scheduler's two launcher checks: fire the launchers whose time has come, and trigger the
@event launchers on the events that match them.

Times are computed here (Lua cannot run croniter) and passed to the scripts, which decide: a
``fire_launcher`` acts only while the launcher's ``next_at`` is still the time it was computed from,
and a ``trigger_launcher`` only for an event after the launcher's last trigger, so any number of
schedulers may run these checks side by side.

Each check is written once, as steps (:data:`jobledger.ledger.runner.Steps`) that the sync and the
async runner both drive: the fire and trigger commands of a batch go in one pipeline, and a launcher
the ledger refuses does not keep the others from firing (see :meth:`jobledger.ledger.runner.Ledger.drive`).
They run as the ``scheduler`` actor; what a launcher's firing appends records ``launcher:ID``.
"""

from __future__ import annotations

import json
from typing import TypeVar

from jobledger.ledger import commands
from jobledger.ledger.clock import Clock
from jobledger.ledger.events import SCHEDULER
from jobledger.ledger.launchers import catch_up
from jobledger.ledger.runner import AsyncLedger, Ledger, Steps
from jobledger.ledger.stream import id_key, newest
from jobledger.projections import launchers as readers
from jobledger.projections.launchers import DueLauncher, EventLauncher

T = TypeVar("T")

BATCH = 500


def _fire_steps(now: int, batch: int) -> Steps[list[int]]:
    """Fire (or skip) every launcher due by ``now``; the ids of those that fired or skipped."""
    handled: list[int] = []
    while True:
        due: list[DueLauncher] = yield readers.due_launchers(now, batch)
        calls = [commands.fire_launcher(d.id, d.due_at, *catch_up(d.type, d.arguments, d.due_at, now))
                 for d in due]  # fmt: skip
        results: list[int] = (yield calls) if calls else []
        handled += [d.id for d, done in zip(due, results, strict=True) if done]
        if len(due) < batch or not any(results):
            return handled


def matches(launcher: EventLauncher, fields: dict[str, str]) -> bool:
    """Whether a stream entry matches an @event launcher (the script checks again): its filter's type
    and queue; never a launcher event, nor the creation of a job the launcher made itself."""
    type_ = fields.get("type", "")
    if type_ != launcher.filter.get("type") or type_.startswith("launcher_"):
        return False
    if "queue" in launcher.filter and fields.get("queue") != launcher.filter["queue"]:
        return False
    return not (
        type_ == "job_created" and json.loads(fields.get("data") or "{}").get("launcher") == str(launcher.id)
    )


def _later(a: str, b: str) -> str:
    return a if id_key(a) >= id_key(b) else b


def _follow_steps(positions: dict[int, str], batch: int) -> Steps[list[int]]:
    """Trigger @event launchers on the events after their last trigger, up to the end of the stream as
    it is now, in batches.  ``positions`` (launcher id -> last event id read for it) carries what was
    read from one call to the next, so a launcher that rarely matches is not read for again."""
    launchers: list[EventLauncher] = yield readers.event_launchers()
    for gone in set(positions) - {launcher.id for launcher in launchers}:
        del positions[gone]
    if not launchers:
        return []
    end: str = yield newest()
    starts = {lr.id: _later(lr.last_trigger, positions.get(lr.id, "0-0")) for lr in launchers}
    cursor, triggered = min(starts.values(), key=id_key), []
    while id_key(cursor) < id_key(end):
        entries: list[tuple[str, dict[str, str]]] = yield readers.stream_page(cursor, end, batch)
        if not entries:
            break
        found = [(lr.id, event_id) for event_id, fields in entries for lr in launchers
                 if id_key(event_id) > id_key(starts[lr.id]) and matches(lr, fields)]  # fmt: skip
        results: list[int] = (yield [commands.trigger_launcher(*f) for f in found]) if found else []
        triggered += [launcher_id for (launcher_id, _), done in zip(found, results, strict=True) if done]
        cursor = entries[-1][0]
    positions.update({lr.id: _later(starts[lr.id], end) for lr in launchers})
    return triggered


def launcher_steps(
    positions: dict[int, str], clock: Clock, batch: int = BATCH
) -> Steps[tuple[list[int], list[int]]]:
    """Both checks once, events first (so an undebounced match fires now): the launchers triggered,
    and those fired or skipped (by the time on ``clock`` once the events are followed)."""
    triggered = yield from _follow_steps(positions, batch)
    fired = yield from _fire_steps(clock(), batch)
    return triggered, fired


def follow_event_launchers(
    ledger: Ledger, positions: dict[int, str] | None = None, batch: int = BATCH
) -> list[int]:
    """The event check: trigger @event launchers on the events that match them; the id of the
    launcher of each trigger that did something (fired, skipped or moved its firing time)."""
    return ledger.as_actor(SCHEDULER).drive(_follow_steps({} if positions is None else positions, batch))


async def check_launchers(ledger: AsyncLedger, positions: dict[int, str], batch: int = BATCH) -> int:
    """:func:`launcher_steps` on the async runner; how many launchers they acted on."""
    triggered, fired = await ledger.as_actor(SCHEDULER).drive(launcher_steps(positions, ledger.clock, batch))
    return len(triggered) + len(fired)
