"""``verify`` on demand: each run of :func:`jobledger.replay.verify.verify` in a thread of its own,
its outcome kept in the process's memory under the run's id until the page has shown it.  What is
kept is a view of a check, not state of the ledger: a restart forgets it, and a new run is one click.

A ledger split into partitions is verified partition by partition, one after the other, each through
a client of its own slot (on a Cluster, its node); the run shows each partition's result and the
whole: ok when every partition is.  On a sealed ledger each partition's events are also checked
against its signed checkpoints (:func:`jobledger.replay.ledger_audit.audit_log`), as ``replay
verify`` does: the run is ok only when they hold too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import redis

from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.keys import Keys
from jobledger.ledger.redis_clients import sync_client
from jobledger.ledger.tasks import cancel_and_wait

if TYPE_CHECKING:
    from jobledger.replay.ledger_audit import LogAudit
    from jobledger.replay.sealed_log import SealedLog
    from jobledger.replay.verify import Verification

log = logging.getLogger("jobledger.api")

#: Runs remembered at most; the oldest are forgotten first.
KEPT = 20


@dataclass
class VerifyRun:
    """One run over the ledger's partitions (``namespaces``, in partition order): ``results``, one
    per partition, once it has finished, ``error`` if it could not; on a sealed ledger, ``logs``
    (each partition's) and ``audits``, each log checked against the partition's events."""

    id: str
    actor: str
    namespaces: list[str]
    logs: list[SealedLog] | None = None
    results: list[Verification] | None = None
    audits: list[LogAudit] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the projections and the sealed events both hold."""
        result = self.result
        return result is not None and result.ok and all(a.ok for a in self.audits)

    @property
    def done(self) -> bool:
        return self.results is not None or self.error is not None

    @property
    def result(self) -> Verification | None:
        """The whole ledger's result: every partition's counts and differences together."""
        if self.results is None:
            return None
        if len(self.results) == 1:
            return self.results[0]
        from jobledger.replay.verify import Verification  # loaded by the run that made the results

        return Verification(
            events=sum(r.events for r in self.results),
            keys=sum(r.keys for r in self.results),
            differences=[d for r in self.results for d in r.differences],
            seconds=sum(r.seconds for r in self.results),
        )

    @property
    def partitions(self) -> list[tuple[str, Verification]]:
        """Each partition's namespace and result, on a split ledger (empty on a ledger of one)."""
        if self.results is None or len(self.results) == 1:
            return []
        return list(zip(self.namespaces, self.results, strict=True))


@dataclass
class VerifyRuns:
    """The runs of this process, by id, for one ledger (``redis_url``, ``namespace``); each run is
    given the namespaces of the ledger's partitions."""

    redis_url: str
    namespace: str
    runs: dict[str, VerifyRun] = field(default_factory=dict)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def start(self, actor: str, namespaces: list[str], logs: list[SealedLog] | None = None) -> VerifyRun:
        """A run by ``actor`` over the partitions of these namespaces (``logs``: their sealed logs,
        on a sealed ledger), started now."""
        run = VerifyRun(uuid.uuid4().hex, actor, namespaces, logs)
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
            run.audits = await asyncio.to_thread(self._audit, run.namespaces, run.logs or [])
            run.results = await asyncio.to_thread(self._verify, run.namespaces)
        except (redis.RedisError, OSError, RuntimeError, ValueError, JobLedgerError) as exc:
            log.warning("verify run %s failed: %s", run.id, exc)
            run.error = f"{type(exc).__name__}: {exc}"
        outcome = "ok" if run.ok else "not ok"
        log.info("verify run %s of %s by %s: %s", run.id, self.namespace, run.actor, outcome)

    def _verify(self, namespaces: list[str]) -> list[Verification]:
        return [self._verify_one(namespace) for namespace in namespaces]

    def _audit(self, namespaces: list[str], logs: list[SealedLog]) -> list[LogAudit]:
        from jobledger.replay.ledger_audit import audit_log  # loaded by the first run

        audits = []
        for namespace, sealed in zip(namespaces, logs, strict=False):
            client = sync_client(self.redis_url, namespace)
            try:
                audits.append(audit_log(client, Keys(namespace), sealed))
            finally:
                client.close()
        return audits

    def _verify_one(self, namespace: str) -> Verification:
        from jobledger.replay.verify import verify  # loaded by the first run, not by every server

        client = sync_client(self.redis_url, namespace)
        try:
            return verify(client, namespace)
        finally:
            client.close()

    async def close(self) -> None:
        """Stop waiting for the runs still going (their threads finish on their own)."""
        with contextlib.suppress(asyncio.CancelledError):
            await cancel_and_wait(list(self.tasks))
