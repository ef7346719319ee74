"""``verify`` on demand: each run of :func:`jobledger.replay.verify.verify` in a thread of its own,
its outcome kept in the process's memory under the run's id until the page has shown it.  What is
kept is a view of a check, not state of the ledger: a restart forgets it, and a new run is one click.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field

import redis

from jobledger.ledger.redis_clients import sync_client
from jobledger.ledger.tasks import cancel_and_wait
from jobledger.replay.verify import Verification, verify

log = logging.getLogger("jobledger.api")

#: Runs remembered at most; the oldest are forgotten first.
KEPT = 20


@dataclass
class VerifyRun:
    """One run: ``result`` once it has finished, ``error`` if it could not."""

    id: str
    actor: str
    result: Verification | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.result is not None or self.error is not None


@dataclass
class VerifyRuns:
    """The runs of this process, by id, for one ledger (``redis_url``, ``namespace``)."""

    redis_url: str
    namespace: str
    runs: dict[str, VerifyRun] = field(default_factory=dict)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def start(self, actor: str) -> VerifyRun:
        run = VerifyRun(uuid.uuid4().hex, actor)
        self.runs[run.id] = run
        while len(self.runs) > KEPT:
            del self.runs[next(iter(self.runs))]
        task = asyncio.create_task(self._run(run))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return run

    def get(self, run_id: str) -> VerifyRun | None:
        return self.runs.get(run_id)

    async def _run(self, run: VerifyRun) -> None:
        try:
            run.result = await asyncio.to_thread(self._verify)
        except (redis.RedisError, OSError, RuntimeError, ValueError) as exc:
            log.warning("verify run %s failed: %s", run.id, exc)
            run.error = f"{type(exc).__name__}: {exc}"
        outcome = "ok" if run.result and run.result.ok else "not ok"
        log.info("verify run %s by %s: %s", run.id, run.actor, outcome)

    def _verify(self) -> Verification:
        client = sync_client(self.redis_url, self.namespace)
        try:
            return verify(client, self.namespace)
        finally:
            client.close()

    async def close(self) -> None:
        """Stop waiting for the runs still going (their threads finish on their own)."""
        with contextlib.suppress(asyncio.CancelledError):
            await cancel_and_wait(list(self.tasks))
