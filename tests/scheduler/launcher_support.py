"""Helpers of the launcher tests: create a launcher from a spec, read back its events, its jobs, its
view and pending set, move the frozen clock and tick."""

from __future__ import annotations

import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import launchers
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.partitioned import Partitioned
from jobledger.ledger.runner import Ledger
from jobledger.projections import launchers as readers
from jobledger.scheduler.loop import tick
from tests.support.ledger import START, create, events, fetch_one, later, update


def new_launcher(
    ledger: Ledger | Partitioned, type_: str, arguments: Any, queue: str = "q", **fields: Any
) -> int:
    spec = LauncherSpec.model_validate({"type": type_, "arguments": arguments, "queue": queue, **fields})
    return ledger.run(launchers.create(spec, ledger.clock()))


def data_of(ledger: Ledger, type_: str) -> list[dict[str, Any]]:
    """The data of every event of this type, oldest first."""
    return [json.loads(e["data"]) for e in events(ledger.client, ledger.keys.namespace) if e["type"] == type_]


def launched(ledger: Ledger, launcher_id: int) -> list[int]:
    """The ids of the jobs the launcher created, oldest first (from their job_created events)."""
    ns = ledger.keys.namespace
    created = [e for e in events(ledger.client, ns) if e["type"] == "job_created"]
    return [int(e["job"]) for e in created if json.loads(e["data"]).get("launcher") == str(launcher_id)]


def view(ledger: Ledger, launcher_id: int) -> dict[str, Any]:
    return ledger.read(readers.launcher(launcher_id))


def pending(ledger: Ledger, launcher_id: int) -> set[int]:
    key = ledger.keys.build("launcher_pending", id=launcher_id)
    return {int(m) for m in ledger.client.smembers(key)}


def advance_to(ledger: Ledger, frozen: FrozenDateTimeFactory, seconds: float) -> dict[str, list[int]]:
    """Move the clock to ``seconds`` after START and run the scheduler once."""
    frozen.move_to(START + later(seconds))
    return tick(ledger)


def complete_job(ledger: Ledger, queue: str) -> str:
    """Create, fetch and complete a job of ``queue``; the id of its job_completed event."""
    job_id = create(ledger, queue)
    assert fetch_one(ledger, queue).id == job_id
    update(ledger, job_id, status="completed")
    return next(
        e["id"] for e in events(ledger.client, ledger.keys.namespace, job_id) if e["type"] == "job_completed"
    )
