"""Replay equality (invariant 4) and placement (invariant 6) under a random launcher workload: every
kind of launcher with limits and templates, jobs that complete, fail, retry, are requeued or deleted,
queues deleted and created again, launchers deleted, and the clock moved on before each scheduler
tick.  Rebuilding from the stream alone must give exactly the live projections."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands, launchers
from jobledger.ledger.commands import Call
from jobledger.ledger.durations import format_time
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.replay.compare import compare
from jobledger.replay.placement import misplaced
from jobledger.replay.rebuild import rebuild
from jobledger.scheduler.loop import tick
from tests.support.ledger import events, frozen_clock

QUEUES = ("A", "B")
SCHEDULES: list[tuple[str, Any]] = [
    ("@cron", "*/7 * * * * *"),
    ("@cron", "0 * * * * ?"),
    ("@interval", "13s"),
    ("@interval", "1m"),
    ("@at", None),  # a time soon after now
    ("@event", {"type": "job_completed", "queue": "A"}),
    ("@event", {"type": "job_created", "queue": "B"}),
    ("@event", {"type": "job_failed"}),
]
TEMPLATES: list[dict[str, Any]] = [
    {},
    {"input": {"k": 1}, "tags": ["t"]},
    {"timeout": "5s", "retries": 1, "retry_delays": ["2s"], "expires_after": "30s"},
    {"unique_key": "u"},
    {"delay": "3s"},
    {"quota_key": "key"},
]


class Workload:
    """One ledger driven by random steps; refused commands must append nothing."""

    def __init__(self, ledger: Ledger, frozen: FrozenDateTimeFactory, seed: int) -> None:
        self.ledger, self.frozen, self.rnd = ledger, frozen, random.Random(seed)

    def run(self, call: Call[Any]) -> Any:
        length = self.ledger.client.xlen(self.ledger.keys.events)
        try:
            return self.ledger.run(call)
        except (NotFound, Conflict):
            assert self.ledger.client.xlen(self.ledger.keys.events) == length
            return None

    def ids(self, key: str) -> list[int]:
        return sorted(int(i) for i in self.ledger.client.smembers(self.ledger.keys.build(key)))

    def jobs(self) -> list[int]:
        last = int(self.ledger.client.get(self.ledger.keys.build("job_id")) or 0)
        return [i for i in range(1, last + 1) if self.ledger.client.exists(self.ledger.keys.job(i))]

    def new_launcher(self) -> None:
        kind, arguments = self.rnd.choice(SCHEDULES)
        if kind == "@at":
            arguments = format_time(self.ledger.clock() + self.rnd.randrange(0, 60_000))
        body = {
            "type": kind,
            "arguments": arguments,
            "queue": self.rnd.choice(QUEUES),
            "template": self.rnd.choice(TEMPLATES),
            "max_pending": self.rnd.choice((0, 0, 1, 2)),
        }
        if kind == "@event":
            body["debounce"] = self.rnd.choice(("0s", "5s"))
        self.run(launchers.create(LauncherSpec.model_validate(body), self.ledger.clock()))

    def new_job(self) -> None:
        self.run(commands.create_job(self.rnd.choice(QUEUES), JobOptions(retries=self.rnd.choice((0, 1)))))

    def work(self) -> None:
        for job in self.run(commands.fetch_jobs(self.rnd.choice(QUEUES), self.rnd.randint(1, 3))) or []:
            status = self.rnd.choice(("completed", "completed", "failed", "cancelled", None))
            if status:
                self.run(commands.update_job(job.id, JobUpdate.model_validate({"status": status})))

    def disturb(self) -> None:
        """Rarer moves: delete a launcher, a job, or a queue (created again later); requeue a job."""
        move = self.rnd.randrange(4)
        if move == 0 and self.ids("launchers"):
            self.run(commands.delete_launcher(self.rnd.choice(self.ids("launchers"))))
        elif move == 1 and self.jobs():
            self.run(commands.delete_job(self.rnd.choice(self.jobs())))
        elif move == 2:
            name = self.rnd.choice(QUEUES)
            if self.ledger.client.exists(self.ledger.keys.queue(name)):
                self.run(commands.delete_queue(name))
            else:
                self.run(commands.put_queue(name, QueueSettings(expires_after=60)))
        elif self.jobs():
            self.run(commands.update_job(self.rnd.choice(self.jobs()), JobUpdate(status="queued")))

    def advance(self) -> None:
        self.frozen.tick(self.rnd.choice((0, 1, 5, 7, 13, 30, 61)))
        tick(self.ledger, batch=3)

    def step(self) -> None:
        moves: list[tuple[float, Callable[[], None]]] = [
            (0.15, self.new_launcher), (0.15, self.new_job), (0.2, self.work), (0.1, self.disturb),
            (0.4, self.advance),
        ]  # fmt: skip
        pick = self.rnd.random()
        for weight, move in moves:
            if pick < weight:
                move()
                return
            pick -= weight
        self.advance()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replay_equals_live_under_a_random_launcher_workload(
    ledger: Ledger, client: redis.Redis, namespace: str, seed: int
) -> None:
    with frozen_clock() as frozen:
        for name in QUEUES:
            ledger.run(commands.put_queue(name, QueueSettings(expires_after=60)))
        workload = Workload(ledger, frozen, seed)
        for number in range(120):
            workload.step()
            if number % 40 == 39:
                assert misplaced(client, namespace) == []
    types = {e["type"] for e in events(client, namespace)}
    assert {"launcher_created", "launcher_fired", "launcher_skipped"} <= types, types
    replay = namespace + "-replay"
    rebuild(client, namespace, replay)
    assert [str(d) for d in compare(client, namespace, replay)] == []
    assert misplaced(client, replay) == []
