"""Running a bulk operation: its batches over every partition, its progress, and the runs of this
server.

A run walks, in each partition at once, the jobs the operation may act on
(:mod:`jobledger.projections.bulk_reads`), and hands them to the ``bulk_jobs`` script a batch of
:data:`jobledger.ledger.bulk.BATCH` at a time: one short script call per batch, so Redis serves
every other client between two.  A dry run counts; a real one then records ``bulk_finished``.  The
runs of this server (:class:`BulkRuns`, one per app, made by its lifespan) go on in the background
once their request has answered, and are cancelled between two batches when the server stops: an
operation cut short, by a stop or a kill, is finished by running it again
(``POST /bulk/{operation}``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from jobledger.ledger.bulk import BATCH, BulkRequest, bulk_finish, bulk_jobs, bulk_start
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.tasks import cancel_and_wait
from jobledger.projections import bulk_reads


@dataclass
class Progress:
    """How far a run has gone: the jobs that matched, the events appended, and whether it ended."""

    operation: str | None
    matched: int = 0
    done: int = 0
    finished: bool = False

    def answer(self) -> dict[str, object]:
        """``POST /bulk``'s answer: ``{"operation", "matched", "done"}``, and ``finished``."""
        return {"operation": self.operation, "matched": self.matched, "done": self.done,
                "finished": self.finished}  # fmt: skip


def _by_partition(router: AsyncPartitioned, ids: list[int]) -> dict[int, list[int]]:
    grouped: dict[int, list[int]] = {}
    for job_id in dict.fromkeys(ids):
        grouped.setdefault(router.partitioning.of_id(job_id), []).append(job_id)
    return grouped


async def _walk(
    router: AsyncPartitioned, partition: int, source: bulk_reads.Source
) -> AsyncIterator[list[int]]:
    """The ids of one set, a batch at a time, up to the highest score it held at the start."""
    upto = await router.read(bulk_reads.top(partition, source))
    after: float | None = None
    while upto is not None:
        ids, last = await router.read(bulk_reads.page(partition, source, after, upto, BATCH))
        if not ids:
            return
        yield ids
        after = last


async def batches(router: AsyncPartitioned, partition: int, request: BulkRequest) -> AsyncIterator[list[int]]:
    """The jobs of ``partition`` that ``request`` may act on, a batch at a time."""
    if request.ids is not None:
        ids = _by_partition(router, request.ids).get(partition, [])
        for at in range(0, len(ids), BATCH):
            yield ids[at : at + BATCH]
        return
    wanted = bulk_reads.statuses(request.action, request.statuses())
    if request.queue is not None:
        names = [request.queue] if (await router.locate([request.queue]))[request.queue] == partition else []
    else:
        names = await router.read(bulk_reads.queues(partition))
    for name in names:
        for source in await router.read(bulk_reads.sources(partition, name, wanted)):
            async for ids in _walk(router, partition, source):
                yield ids


async def _run_partition(
    router: AsyncPartitioned, partition: int, request: BulkRequest, progress: Progress
) -> None:
    async for ids in batches(router, partition, request):
        call = bulk_jobs(partition, request.action, progress.operation, request, ids)
        matched, done = await router.run(call)
        progress.matched += matched
        progress.done += done


async def run(router: AsyncPartitioned, request: BulkRequest, progress: Progress) -> Progress:
    """Go through every partition at once (``progress.operation`` None: only count), then record
    the end of a real operation."""
    partitions = range(router.partitioning.count)
    await asyncio.gather(*(_run_partition(router, p, request, progress) for p in partitions))
    if progress.operation is not None:
        await router.run(bulk_finish(progress.operation, progress.matched, progress.done))
    progress.finished = True
    return progress


@dataclass
class BulkRuns:
    """The operations this server runs: their progress, and their tasks, cancelled at its stop."""

    running: dict[str, Progress] = field(default_factory=dict)
    tasks: set[asyncio.Task[Progress]] = field(default_factory=set)

    def start(
        self, router: AsyncPartitioned, request: BulkRequest, progress: Progress
    ) -> asyncio.Task[Progress]:
        """Run the operation in the background (one run per operation on this server at a time)."""
        assert progress.operation is not None
        self.running[progress.operation] = progress
        task = asyncio.create_task(run(router, request, progress))
        self.tasks.add(task)
        operation = progress.operation

        def ended(done: asyncio.Task[Progress]) -> None:
            self.tasks.discard(done)
            self.running.pop(operation, None)
            if not done.cancelled():
                done.exception()  # retrieved: a failed run is read again from the ledger

        task.add_done_callback(ended)
        return task

    async def begin(self, ledger: OpeningLedger, request: BulkRequest) -> tuple[str, asyncio.Task[Progress]]:
        """Record a new operation's start (with ``ledger``'s actor), then run it in the background:
        its id, and its run."""
        operation = await ledger.run(bulk_start(request))
        return operation, self.start(await ledger.opened(), request, Progress(operation))

    async def close(self) -> None:
        """Stop every run between two batches (each job stays in one state)."""
        with contextlib.suppress(Exception):
            await cancel_and_wait(self.tasks)
