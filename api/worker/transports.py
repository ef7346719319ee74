"""How a :class:`jobledger.worker.worker.Worker` reaches the ledger: over HTTP, or straight to Redis.

Both transports run the same ledger code (``fetch_jobs``, ``heartbeat``, and the updates with the
next fetch as ``update_jobs`` / ``update_and_fetch``, the same code as ``update_job`` in one call)
with the same arguments, so a job leaves the same events whichever a worker uses.  Both send the
jobs that finish while one call is on its way together in the next, and the next fetch in that same
call (:class:`GroupCommit`; over HTTP one ``PATCH /jobs``), so at concurrency 1 a job costs one
round trip.  Both name the attempt on every update (fencing) and raise the
:mod:`jobledger.client.errors` tree, so the worker handles one kind of error.  Neither polls an idle
queue: over HTTP the fetch is a long-poll (``?wait=``), one per queue at once; over Redis the worker
waits on the ledger itself (:class:`jobledger.ledger.watch.LedgerWatch`, one follower of the stream
per process) and fetches when an event names one of its queues (a worker busy with jobs stops
waiting on them, and the follower stops).
HTTP works from anywhere; Redis is the fast path for Python workers that can reach the ledger's
Redis: no HTTP hop.  Over Redis the ledger is opened on first use and split as it is stored: each
fetch runs in its queue's partition, a batch of updates over jobs of several partitions runs as one
call per partition, and the worker waits on the partitions of its queues.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar, cast

import httpx2

from jobledger.blobs import BlobStore
from jobledger.blobs.guarded import GuardedStore
from jobledger.client import AsyncClient
from jobledger.client.calls import UNSET
from jobledger.client.errors import ClientError, NotFound
from jobledger.client.models import FetchedJob, StoredFile
from jobledger.ledger import commands
from jobledger.ledger.commands import Fetched
from jobledger.ledger.durations import parse_ms
from jobledger.ledger.keys import DEFAULT_NAMESPACE
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.partitions import id_route
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import masked_url
from jobledger.ledger.requests import MAX_TRACEBACK, JobUpdate, QueueSettings
from jobledger.ledger.watch import LedgerWatch, Subscription, queue_topic
from jobledger.projections import readers
from jobledger.worker import blob_files
from jobledger.worker.commit import ClientBatches, GroupCommit, LedgerBatches, translated
from jobledger.worker.long_polls import LongPolls
from jobledger.worker.result_files import ResultFile
from jobledger.worker.watch import JobWatch, QueueFeeds, Watching

__all__ = ["Assignment", "Failure", "GroupCommit", "HttpTransport", "RedisTransport", "Transport"]

T = TypeVar("T")

log = logging.getLogger("jobledger.worker")

#: Seconds a long-poll (HTTP) waits on the server before it is made again: an idle worker's cost.
LONG_POLL = 20.0
#: The shortest time (s) between two long-polls of a queue, should a server answer before its wait.
MIN_POLL_CYCLE = 1.0
#: Short requests (completions, heartbeats, reads) an HTTP worker has on their way at once.
IN_FLIGHT = 8
#: Seconds between two fetches of an idle Redis worker that no event woke (a safety net only).
IDLE_FETCH = 60.0
#: Fetches in a row that find jobs before a Redis worker stops waiting on its queues' events.
BUSY_FETCHES = 16
#: Pause (s) after a fetch failed, doubling up to the second figure while it keeps failing.
ERROR_PAUSE = (0.5, 10.0)


@dataclass(frozen=True)
class Assignment:
    """A job this worker fetched: now running as ``attempt``.  ``heartbeat_timeout`` (seconds) is
    filled in when the transport could read it together with the fetch, else None.
    ``fetched_at``: ``time.monotonic()`` when the fetch was sent.  ``files``: its input files.
    ``traceparent``: the W3C traceparent it was created with, if any (the handler's span is its child)."""

    queue: str
    id: int
    attempt: int
    input: Any
    heartbeat_timeout: float | None = None
    fetched_at: float = field(default=0.0, compare=False)
    files: tuple[StoredFile, ...] = ()
    traceparent: str | None = None


@dataclass(frozen=True)
class Failure:
    """Why a handler failed: the exception's class name (the error's kind, which decides retry by
    the job's retry_on / no_retry_on), its message, and its traceback, recorded in the job's errors."""

    kind: str
    message: str
    traceback: str | None = None

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        """An exception's failure; one with a ``kind`` (and ``details``) attribute names its own
        kind (and what goes in the traceback's place)."""
        kind, details = getattr(exc, "kind", None), getattr(exc, "details", None)
        text = details if isinstance(details, str) else "".join(traceback.format_exception(exc))
        return cls(
            kind if isinstance(kind, str) and kind else type(exc).__name__,
            str(exc),
            tail(text, MAX_TRACEBACK),
        )

    def error(self) -> dict[str, str]:
        """The ``error`` of the failing PATCH, within the server's limits."""
        error = {"kind": self.kind[:100] or "error", "message": self.message[:1000]}
        if self.traceback:
            error["traceback"] = tail(self.traceback, MAX_TRACEBACK)
        return error


def tail(text: str, limit: int) -> str:
    """``text`` if it takes at most ``limit`` bytes in UTF-8, else its end that does, marked cut."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    mark = "[...]\n"
    return mark + raw[len(raw) - limit + len(mark) :].decode(errors="ignore")


class Transport(Protocol):
    """What a worker needs from the ledger.  Every method raises :class:`jobledger.client.ClientError`."""

    def describe(self) -> str: ...

    async def fetch(self, queue: str, count: int, worker: str) -> list[Assignment]: ...

    async def next_jobs(
        self, queues: list[str], count: int, worker: str, stopping: asyncio.Event
    ) -> list[Assignment]:
        """Up to ``count`` jobs, first queue first, waiting until some come or ``stopping`` is set
        (an empty list then, or after a long quiet spell).  More than ``count`` only when several
        queues answered at once: the worker hands the extra ones back.  Errors are logged here."""
        ...

    async def heartbeat_timeout(self, job: Assignment) -> float: ...

    async def heartbeat(self, job: Assignment) -> None: ...

    async def run_timeout(self, job: Assignment) -> float:
        """The job's ``timeout`` in seconds (0: none)."""
        ...

    async def set_output(self, job: Assignment, output: Any) -> None: ...

    async def complete(self, job: Assignment, output: Any = UNSET) -> None: ...

    async def fail(self, job: Assignment, failure: Failure) -> None: ...

    async def hand_back(self, job: Assignment) -> None:
        """Running -> queued (``job_returned``): the job goes back unfinished, no retry counted."""
        ...

    async def download(self, job: Assignment, ref: StoredFile, dest: Path) -> None:
        """The job's input file ``ref`` into ``dest``, checked (:class:`DigestMismatch` when wrong)."""
        ...

    async def add_result(self, job: Assignment, name: str, file: ResultFile, media_type: str | None) -> None:
        """Store ``file`` (a result opened safely, :mod:`jobledger.worker.result_files`) as the job's
        result ``name``, for its attempt."""
        ...

    def watch(self, job: Assignment, on_over: Callable[[str], None]) -> Watching:
        """Call ``on_over(reason)`` within about a second once the job's attempt is over elsewhere
        (cancelled, deleted, timed out, ...), until the handle is closed."""
        ...

    async def close(self) -> None: ...


class FetchErrors:
    """Fetch failures, logged once per queue until the error changes, and the pause they call for."""

    def __init__(self) -> None:
        self._failing: dict[str, str] = {}
        self._pause = ERROR_PAUSE[0]

    def failed(self, queue: str, exc: ClientError) -> float:
        """Note a failure; the pause to take before trying the queue again."""
        if self._failing.get(queue) != str(exc):
            log.warning("cannot fetch from queue %r: %s", queue, exc)
        self._failing[queue] = str(exc)
        pause, self._pause = self._pause, min(self._pause * 2, ERROR_PAUSE[1])
        return pause

    def fine(self, queue: str) -> None:
        if self._failing.pop(queue, None) is not None:
            log.info("fetching from queue %r again", queue)
            self._pause = ERROR_PAUSE[0]


class Finishing:
    """A transport's ends of runs: each an update of the job, fenced by its attempt, sent through
    the transport's :class:`GroupCommit` with the others of its moment."""

    _finishing: GroupCommit[Any]

    async def complete(self, job: Assignment, output: Any = UNSET) -> None:
        fields: dict[str, Any] = {"status": "completed", "attempt": job.attempt}
        if output is not UNSET:
            fields["output"] = output
        await self._finishing.update(job.id, JobUpdate(**fields))

    async def fail(self, job: Assignment, failure: Failure) -> None:
        fields = {"status": "failed", "attempt": job.attempt, "error": failure.error()}
        await self._finishing.update(job.id, JobUpdate.model_validate(fields))

    async def hand_back(self, job: Assignment) -> None:
        await self._finishing.update(job.id, JobUpdate(status="queued", attempt=job.attempt))


class HttpTransport(Finishing):
    """The worker over jobledger's HTTP API, through :class:`jobledger.client.AsyncClient`.

    Long-polls wait ``long_poll`` seconds on the server.  They go through a client of their own,
    whose reads outlast that wait, unless ``client`` is given: it then serves them too, and its
    timeout must outlast ``long_poll``.

    A fetch asks for each job's ``heartbeat_timeout`` with it (a server that does not add it is
    asked job by job).  At most :data:`IN_FLIGHT` of the worker's short requests (completions,
    heartbeats, reads) are on their way at once, each on a connection kept open for the next: a
    worker of high concurrency would otherwise queue hundreds of requests inside the HTTP client's
    pool, whose hand-out of connections costs in proportion to the queue for every request (what
    that did to a worker of concurrency 64 is in docs/benchmarks.md), and open and close a
    connection per request past its keep-alive limit.
    """

    def __init__(
        self,
        url: str | None = None,
        client: AsyncClient | None = None,
        long_poll: float = LONG_POLL,
        token: str | None = None,
    ) -> None:
        # no cap on connections (feeds and file transfers hold theirs as long as they last): the
        # short requests are capped by _in_flight, and each of theirs is kept for the next
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=IN_FLIGHT + 4)
        self.client = client or AsyncClient(url, token=token, limits=limits)
        self.long_poll = long_poll
        self._polls = client or AsyncClient(self.client.url, timeout=long_poll + 10, token=self.client.token)
        self._feeds = QueueFeeds(self.client)
        self._errors = FetchErrors()
        self._in_flight = asyncio.Semaphore(IN_FLIGHT)
        self._finishing: GroupCommit[FetchedJob] = GroupCommit(ClientBatches(self.client, self._short))
        self._long_polls: LongPolls[Assignment] = LongPolls(self._hand_back_all)

    def describe(self) -> str:
        return f"server {self.client.url}"

    async def _short(self, request: Callable[[], Awaitable[T]]) -> T:
        """A short request (not a long-poll, a feed or a file), sent once fewer than IN_FLIGHT are out."""
        async with self._in_flight:
            return await request()

    async def fetch(self, queue: str, count: int, worker: str, wait: float | None = None) -> list[Assignment]:
        """Start up to ``count`` jobs: a long-poll of ``wait`` seconds, or without one at once, in
        the same request as the updates waiting to go, if any (:meth:`GroupCommit.fetch`)."""
        sent = time.monotonic()
        if wait:
            fetched = await self._polls.fetch(queue, count, worker, wait, heartbeat_timeout=True)
        else:
            fetched = await self._finishing.fetch(queue, count, worker)
        return [
            Assignment(
                queue, f.id, f.attempt, f.input, _seconds(f.heartbeat_timeout), sent, f.files, f.traceparent
            )
            for f in fetched
        ]

    async def next_jobs(
        self, queues: list[str], count: int, worker: str, stopping: asyncio.Event
    ) -> list[Assignment]:
        """One queue: one long-poll, after a look that goes with the updates waiting to go, if any.
        Several: a look at each in order (but those with a poll still open), then, if all were
        empty, a long-poll on each at once; once one answers with jobs, the others stay open
        (:class:`~jobledger.worker.long_polls.LongPolls`)."""
        if len(queues) > 1 or self._finishing.waiting():
            jobs: list[Assignment] = []
            for queue in queues:
                if len(jobs) < count and not self._long_polls.is_open(queue):
                    jobs += await self._fetch_logged(queue, count - len(jobs), worker, None)
            if jobs or stopping.is_set():
                return jobs
        return await self._long_polls.first_answers(
            queues, count, lambda queue, n: self._poll(queue, n, worker), stopping
        )

    async def _hand_back_all(self, jobs: list[Assignment]) -> None:
        for job in jobs:
            try:
                await self.hand_back(job)
            except ClientError as exc:
                log.warning("job %s: not handed back (%s); its timeout will recover it", job.id, exc)

    async def _poll(self, queue: str, count: int, worker: str) -> list[Assignment]:
        began = time.monotonic()
        jobs = await self._fetch_logged(queue, count, worker, self.long_poll, pause=True)
        if (
            not jobs
        ):  # a server that answers at once (one that does not long-poll): not more than once a second
            await asyncio.sleep(max(0.0, began + MIN_POLL_CYCLE - time.monotonic()))
        return jobs

    async def _fetch_logged(
        self, queue: str, count: int, worker: str, wait: float | None, pause: bool = False
    ) -> list[Assignment]:
        try:
            jobs = await self.fetch(queue, count, worker, wait)
        except ClientError as exc:
            seconds = self._errors.failed(queue, exc)
            if pause:
                await asyncio.sleep(seconds)
            return []
        self._errors.fine(queue)
        return jobs

    async def heartbeat_timeout(self, job: Assignment) -> float:
        fields = await self._short(lambda: self.client.get_fields(job.id, "heartbeat_timeout"))
        return parse_ms(fields["heartbeat_timeout"]) / 1000

    async def heartbeat(self, job: Assignment) -> None:
        await self._short(lambda: self.client.heartbeat(job.id, job.attempt))

    async def run_timeout(self, job: Assignment) -> float:
        fields = await self._short(lambda: self.client.get_fields(job.id, "timeout"))
        return parse_ms(fields["timeout"]) / 1000

    async def set_output(self, job: Assignment, output: Any) -> None:
        await self._short(lambda: self.client.set_output(job.id, output, job.attempt))

    async def download(self, job: Assignment, ref: StoredFile, dest: Path) -> None:
        await self.client.download_file(job.id, ref.name, dest)

    async def add_result(self, job: Assignment, name: str, file: ResultFile, media_type: str | None) -> None:
        await self.client.add_result(job.id, name, cast(IO[bytes], file), job.attempt, media_type=media_type)

    def watch(self, job: Assignment, on_over: Callable[[str], None]) -> Watching:
        return self._feeds.watch(job, on_over)

    async def close(self) -> None:
        await self._long_polls.close()
        await self._finishing.drained()
        await self._feeds.close()
        await self._polls.aclose()
        await self.client.aclose()


class RedisTransport(Finishing):
    """The worker straight on the ledger: the commands' scripts through the ledger's router
    (:class:`OpeningLedger`: opened on first use, split as stored, or for a new ledger into
    ``partitions``); the bytes of jobs' files through ``blobs``, the store the server uses (without
    it, a job with files fails: its files cannot be had)."""

    def __init__(
        self,
        redis_url: str,
        namespace: str = DEFAULT_NAMESPACE,
        blobs: BlobStore | None = None,
        partitions: int | None = None,
    ) -> None:
        self._url = redis_url
        self.namespace = namespace
        self.ledger = OpeningLedger(redis_url, namespace, partitions)
        # its puts tell the collector, as the server's do (see jobledger.blobs.guarded)
        self.blobs = None if blobs is None else GuardedStore(blobs, self.ledger)
        self.ledger_watch = LedgerWatch(self.ledger)
        self._finishing: GroupCommit[Fetched] = GroupCommit(LedgerBatches(self.ledger))
        self._woken: Subscription | None = None
        self._busy_fetches = 0
        self._errors = FetchErrors()

    def describe(self) -> str:
        return f"Redis {masked_url(self._url)}, namespace {self.namespace}"

    async def fetch(self, queue: str, count: int, worker: str) -> list[Assignment]:
        """Start up to ``count`` jobs: in the same call as the completions waiting to go, if any
        (:meth:`GroupCommit.fetch`); each job's ``heartbeat_timeout`` comes with it."""
        sent = time.monotonic()
        fetched = await self._finishing.fetch(queue, count, worker)
        return [
            Assignment(
                queue,
                f.id,
                f.attempt,
                _decode(f.input_text),
                f.heartbeat_timeout_ms / 1000,
                sent,
                _files(f.files_text),
                f.traceparent,
            )
            for f in fetched
        ]

    async def next_jobs(
        self, queues: list[str], count: int, worker: str, stopping: asyncio.Event
    ) -> list[Assignment]:
        """Fetch from the queues in order; if all are empty, wait for an event naming one of them
        (subscribed before a last look, so none is missed) and fetch again.  A worker that finds
        jobs :data:`BUSY_FETCHES` times in a row without waiting drops its subscription, so that a
        process busy with a long queue does not follow every event of the ledger."""
        while not stopping.is_set():
            jobs: list[Assignment] = []
            pause = IDLE_FETCH
            for queue in queues:
                if len(jobs) >= count:
                    break
                try:
                    jobs += await self.fetch(queue, count - len(jobs), worker)
                    self._errors.fine(queue)
                except ClientError as exc:
                    pause = min(pause, self._errors.failed(queue, exc))
            if jobs:
                self._busy_fetches += 1
                if self._woken is not None and self._busy_fetches >= BUSY_FETCHES:
                    self._woken.close()
                    self._woken = None
                return jobs
            self._busy_fetches = 0
            if self._woken is None:
                self._woken = self.ledger_watch.subscribe([queue_topic(q) for q in queues])
                continue  # one more look, now that no event can go unseen
            await until_either(self._woken.wait(pause), stopping)
        return []

    async def heartbeat_timeout(self, job: Assignment) -> float:
        return await translated(self.ledger.read(_heartbeat_timeout(job.id)))

    async def heartbeat(self, job: Assignment) -> None:
        await translated(self.ledger.run(commands.heartbeat(job.id, job.attempt)))

    async def run_timeout(self, job: Assignment) -> float:
        fields = await translated(self.ledger.read(readers.job(job.id, ("timeout",))))
        return parse_ms(fields["timeout"]) / 1000

    async def set_output(self, job: Assignment, output: Any) -> None:
        await translated(self.ledger.run(commands.set_output(job.id, output, job.attempt)))

    async def download(self, job: Assignment, ref: StoredFile, dest: Path) -> None:
        await blob_files.download(self._store(), ref, dest)

    async def add_result(self, job: Assignment, name: str, file: ResultFile, media_type: str | None) -> None:
        try:
            settings = await translated(self.ledger.read(readers.queue(job.queue)))
            limit = settings.max_file_size
        except NotFound:  # the queue was deleted under its running job: its default limit
            limit = QueueSettings().max_file_size
        ref = await blob_files.store(self._store(), name, file, media_type, limit)
        await translated(self.ledger.run(commands.add_result(job.id, ref, job.attempt)))

    def _store(self) -> BlobStore:
        if self.blobs is None:
            raise ClientError("a worker over Redis reads and writes files through a blob store, and has none")
        return self.blobs

    def watch(self, job: Assignment, on_over: Callable[[str], None]) -> Watching:
        return JobWatch(self.ledger, self.ledger_watch, job.id, job.attempt, on_over)

    async def close(self) -> None:
        if self._woken is not None:
            self._woken.close()
        await self._finishing.drained()
        await _close_watch(self.ledger_watch, self.ledger)
        await self.ledger.aclose()


async def _close_watch(watch: LedgerWatch, ledger: OpeningLedger) -> None:
    """Stop the watch's followers, even when a blocking read shrugs off the cancellation (seen with
    redis-py 8.1: the read then lasts its whole block): after a moment, the partitions' clients'
    connections are closed under them and they are cancelled again."""
    first = asyncio.ensure_future(watch.close())
    done, _ = await asyncio.wait({first}, timeout=0.3)
    if done:
        return
    for runner in ledger.router.runners if ledger.router is not None else []:
        await runner.client.connection_pool.disconnect()
    await asyncio.wait({first, asyncio.ensure_future(watch.close())}, timeout=2.0)


async def until_either(waiting: Any, stopping: asyncio.Event) -> None:
    """Await the coroutine ``waiting`` until it ends or ``stopping`` is set (then it is cancelled)."""
    tasks = {asyncio.ensure_future(waiting), asyncio.ensure_future(stopping.wait())}
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def _heartbeat_timeout(job_id: int) -> Read[float]:
    """The job's heartbeat_timeout in seconds (0 when off or gone), read in its partition."""
    return Read(
        lambda keys: [("HGET", keys.job(job_id), "heartbeat_timeout")],
        lambda replies: int(replies[0] or 0) / 1000,
        id_route(job_id),
    )


def _seconds(duration: str | None) -> float | None:
    """A duration the server gave, in seconds; None when it gave none."""
    return None if duration is None else parse_ms(duration) / 1000


def _files(text: str | None) -> tuple[StoredFile, ...]:
    return tuple(StoredFile.model_validate(f) for f in json.loads(text)) if text else ()


def _decode(text: str | None) -> Any:
    return None if text is None else json.loads(text)
