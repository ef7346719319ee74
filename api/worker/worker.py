"""The worker: runs a handler over jobs of one or more queues, with heartbeats, fencing, cancellation
and a graceful stop.

``Worker(handler, ["emails"], concurrency=4).run()`` fetches jobs (the first queue first, as many as
it has free slots in one call), calls ``handler(job)`` with a :class:`JobContext` for each, and
completes the job with what the handler returns, or fails it if the handler raises (the error's
kind is the exception's class name, its traceback kept with it).  An idle worker does not poll:
over HTTP it long-polls, over Redis it waits on the ledger (:mod:`jobledger.worker.transports`).

While a handler runs, heartbeats go out in the background at a third of the job's
``heartbeat_timeout``; once it has run for :data:`WATCH_AFTER`, the worker watches its job, so that
within about a second of the job being cancelled, deleted or timed out elsewhere ``ctx.cancelled``
is True and an ``async def`` handler is cancelled (a plain function, run in a thread of its own,
reads ``ctx.cancelled``).  Every update names the attempt the job was fetched as, so a worker whose
job went to another can never complete, fail or heartbeat it; a job cancelled elsewhere is not
completed.

Stopping (SIGTERM / SIGINT, or :meth:`Worker.stop`): no new job is fetched; running handlers get
``grace_period`` seconds to finish; the jobs of those that have not are handed back (running ->
queued, ``job_returned``: no retry counted, their attempt fenced off) for another worker to run.
A second stop hands them back at once.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobledger.blobs import BlobStore
from jobledger.client.errors import ClientError, Conflict, NotFound, ServerError, Unavailable
from jobledger.ledger.keys import DEFAULT_NAMESPACE
from jobledger.ledger.requests import MAX_WORKER_ID, checked_worker_id
from jobledger.runtime.logs import JOB_FIELDS
from jobledger.worker import event_loop
from jobledger.worker.files import ResultRefused
from jobledger.worker.jobs import Handler, JobContext, Run, in_thread
from jobledger.worker.metrics import WorkerMetrics
from jobledger.worker.transports import Assignment, Failure, HttpTransport, RedisTransport, Transport

if TYPE_CHECKING:
    from jobledger.worker.job_spans import JobSpans

__all__ = ["Handler", "JobContext", "Worker"]

log = logging.getLogger("jobledger.worker")

#: Seconds a handler runs before the worker watches its job for a cancellation (short jobs never
#: pay for it; a cancellation before then is learned at this point).
WATCH_AFTER = 0.5
#: How the attempt of a job timed out elsewhere reaches the worker: the job's status, or the event.
_TIMED_OUT = frozenset({"timed_out", "job_timed_out"})
#: Seconds to wait for the updates of the jobs handed back or finished after the grace period.
FINISH_TIMEOUT = 5.0
#: Pause (s) before resending a completion or failure the ledger could not take, doubling up to the
#: second figure.
RESEND_PAUSE = (0.2, 5.0)
#: How long (s) before the attempt's deadline the last resend of a completion or failure goes out,
#: whatever the doubling says (after it, resends go out at the first pause until the deadline).
LAST_RESEND = 0.5
#: How long (s) a completion or failure is resent when the job has heartbeats off (the worker then
#: does not know when the attempt is timed out).
RESEND_LIMIT = 120.0


def _resend_pause(pause: float, left: float) -> float:
    """How long to wait before the next resend, ``left`` seconds before the attempt's deadline:
    ``pause``, cut so that a try goes out :data:`LAST_RESEND` before the deadline (the ledger may
    be back by then, and a try at the deadline itself lands too late); within that last stretch,
    the first pause, until the deadline."""
    before_last = left - LAST_RESEND
    if before_last > 0:
        return min(pause, before_last)
    return min(RESEND_PAUSE[0], left)


class Ended(Enum):
    """How a run ended when its handler's result is not recorded."""

    CANCELLED = "cancelled"  # its attempt is over elsewhere
    RETURNED = "returned"  # the worker stopped before the handler finished


class Worker:
    """Run ``handler`` over the jobs of ``queues``, ``concurrency`` at a time.

    ``transport``: ``"http"`` (the server at ``url``, default ``$JOBLEDGER_URL`` or
    http://127.0.0.1:8023; ``token``, its API token, default ``$JOBLEDGER_TOKEN``), ``"redis"`` (the
    ledger at ``redis_url`` in ``namespace``, directly), or a
    :class:`~jobledger.worker.transports.Transport`.  ``heartbeat_interval`` (seconds) replaces reading
    each job's ``heartbeat_timeout``.  Files (see :mod:`jobledger.worker.files`): each job with
    files gets a directory under ``files_dir`` (default: the temporary directory) with its files
    downloaded and checked; ``upload_written`` uploads every file the handler wrote there as a result
    (else only those named by ``job.add_result``); ``keep_files`` leaves the directories behind;
    ``blobs`` is the blob store a worker over Redis reads and writes files through, and
    ``partitions`` the count a new ledger is split into (a stored count is kept whatever it says).
    ``metrics``: where the worker records its jobs in hand, handler durations, outcomes and resends
    (:mod:`jobledger.worker.metrics`); none by default.
    ``tracing``: run each job in an OpenTelemetry span, the child of the producer's
    (:mod:`jobledger.worker.job_spans`); left None, when the process has set up a tracer provider.
    """

    def __init__(
        self,
        handler: Handler,
        queues: str | Sequence[str],
        *,
        concurrency: int = 1,
        transport: str | Transport = "http",
        url: str | None = None,
        token: str | None = None,
        redis_url: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        worker_id: str | None = None,
        heartbeat_interval: float | None = None,
        grace_period: float = 30.0,
        files_dir: str | os.PathLike[str] | None = None,
        upload_written: bool = False,
        keep_files: bool = False,
        blobs: BlobStore | None = None,
        partitions: int | None = None,
        metrics: WorkerMetrics | None = None,
        tracing: bool | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.handler = handler
        self._handler_is_async = _is_async(handler)
        self.queues = [queues] if isinstance(queues, str) else list(queues)
        self.concurrency = concurrency
        self.transport = _transport(transport, url, redis_url, namespace, token, blobs, partitions)
        default_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.worker_id = checked_worker_id(worker_id) if worker_id else default_id[-MAX_WORKER_ID:]
        self.heartbeat_interval = heartbeat_interval
        self.grace_period = grace_period
        self.files_dir = None if files_dir is None else Path(files_dir)
        self.upload_written = upload_written
        self.keep_files = keep_files
        self._spans = _job_spans(tracing)
        self.counts = {"completed": 0, "failed": 0, "cancelled": 0, "returned": 0}
        self.metrics = metrics
        if metrics is not None:
            metrics.count_in_hand(lambda: len(self._runs))
        #: Set once :meth:`run_async` is under way (so :meth:`stop` can reach it from another thread).
        self.started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = asyncio.Event()
        self._hurry = asyncio.Event()
        self._runs: dict[asyncio.Task[None], Run] = {}
        #: Runs whose handler has not finished: what takes a slot.  A run whose outcome is on its
        #: way to the ledger frees its slot, so the next fetch can go with that outcome.
        self._busy = 0
        self._slot_waiter: asyncio.Future[None] | None = None
        #: The one timer that starts watching the runs that have run for WATCH_AFTER, while some
        #: have not yet (a timer per job cost a no-op job more than the rest of its watching).
        self._watch_timer: asyncio.TimerHandle | None = None

    def run(self) -> None:
        """Work until SIGTERM or SIGINT, then stop gracefully (a second signal: at once).  Blocks;
        call from the main thread."""
        event_loop.run(self._run_with_signals())

    async def run_async(self) -> None:
        """Work until :meth:`stop` is called, then stop gracefully (see the module's docstring)."""
        self._loop = asyncio.get_running_loop()
        self.started.set()
        where, queues = self.transport.describe(), ", ".join(self.queues)
        log.info(
            "worker %s started: %s, queues %s, concurrency %d",
            self.worker_id,
            where,
            queues,
            self.concurrency,
        )
        try:
            await self._fetch_loop()
            await self._drain()
        finally:
            if self._watch_timer is not None:
                self._watch_timer.cancel()
            await self.transport.close()
            done = ", ".join(f"{n} {outcome}" for outcome, n in self.counts.items())
            log.info("worker %s stopped: %s", self.worker_id, done)

    def stop(self) -> None:
        """Stop taking jobs and finish (the second call: hand back) those in hand.  Safe from any
        thread and from a signal handler."""
        if self._loop is None:
            self._stopping.set()
        else:
            self._loop.call_soon_threadsafe(self._request_stop)

    def _request_stop(self) -> None:
        if self._stopping.is_set():
            if not self._hurry.is_set() and self._runs:
                log.info("stopping now: handing back %d running job(s)", len(self._runs))
            self._hurry.set()
        self._stopping.set()
        self._wake_fetch_loop()

    async def _run_with_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        try:
            await self.run_async()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    # Fetching

    async def _fetch_loop(self) -> None:
        while not self._stopping.is_set():
            await self._wait_for_slot()
            if self._stopping.is_set():
                return
            free = self.concurrency - self._busy
            jobs = await self.transport.next_jobs(self.queues, free, self.worker_id, self._stopping)
            await self._take(jobs)

    async def _wait_for_slot(self) -> None:
        """Until a slot is free or the worker stops.  Woken straight by :meth:`_wake_fetch_loop`
        (one future, no helper tasks): the fetch then runs before the completion that freed the slot
        is sent, and goes with it."""
        while self._busy >= self.concurrency and not self._stopping.is_set():
            self._slot_waiter = asyncio.get_running_loop().create_future()
            try:
                await self._slot_waiter
            finally:
                self._slot_waiter = None

    def _wake_fetch_loop(self) -> None:
        if self._slot_waiter is not None and not self._slot_waiter.done():
            self._slot_waiter.set_result(None)

    async def _take(self, jobs: list[Assignment]) -> None:
        """Start the jobs fetched, as many as there are free slots; hand back the rest (fetched as the
        worker began to stop, or from two queues that answered at once)."""
        free = 0 if self._stopping.is_set() else self.concurrency - self._busy
        for job in jobs[:free]:
            self._start(job)
        extra = jobs[free:]
        if extra:
            why = "the worker is stopping" if self._stopping.is_set() else "no free slot"
            log.info("handing back job(s) %s: %s", ", ".join(str(j.id) for j in extra), why)
            await asyncio.gather(*(self._hand_back(job) for job in extra))

    async def _hand_back(self, job: Assignment) -> None:
        try:
            await self.transport.hand_back(job)
            self.counts["returned"] += 1
        except ClientError as exc:
            log.warning("%s: not handed back (%s); its timeout will recover it", _named(job), exc)

    def _start(self, job: Assignment) -> None:
        run = Run(job, self.worker_id, self.transport, log, self.files_dir, self.upload_written)
        self._busy += 1
        task = asyncio.create_task(self._work(run), name=f"job-{job.id}")
        self._runs[task] = run
        task.add_done_callback(self._runs.pop)
        if self._watch_timer is None:
            self._watch_timer = asyncio.get_running_loop().call_later(WATCH_AFTER, self._watch_due)

    def _watch_due(self) -> None:
        """Watch each run that has run for :data:`WATCH_AFTER` (the transport tells it when its
        attempt is over, until its handler is done); come back when the next one is due."""
        self._watch_timer = None
        now, next_due = time.monotonic(), math.inf
        for run in self._runs.values():
            if run.watching is not None or run.done.is_set():
                continue
            due = run.started + WATCH_AFTER
            if due <= now:
                run.watching = self.transport.watch(run.job, run.cancel)
            else:
                next_due = min(next_due, due)
        if next_due < math.inf:
            self._watch_timer = asyncio.get_running_loop().call_later(next_due - now, self._watch_due)

    # One job

    async def _work(self, run: Run) -> None:
        beats = None
        if self.heartbeat_interval is not None or run.job.heartbeat_timeout != 0:
            beats = asyncio.create_task(self._heartbeats(run))
        try:
            outcome = await self._traced(run)
        finally:
            run.done.set()
            if run.watching is not None:
                run.watching.close()
            self._busy -= 1
            self._wake_fetch_loop()
            await run.close_outbox()
        try:
            await self._finish(run, outcome)
        finally:
            if not self.keep_files:
                run.files.remove()
        if beats is not None:
            await beats

    async def _traced(self, run: Run) -> Any:
        """:meth:`_with_files`, in the job's span when the worker traces."""
        if self._spans is None:
            return await self._with_files(run)
        with self._spans.handling(run.job) as ended:
            outcome = await self._with_files(run)
            ended(_outcome_name(outcome), outcome if isinstance(outcome, Failure) else None)
            return outcome

    async def _with_files(self, run: Run) -> Any:
        """The handler's outcome, its input files downloaded before it runs and its results
        uploaded after it returned (a failure to do either fails the job)."""
        if run.job.files:
            failure = await run.files.download(self.transport)
            if failure is not None:
                return failure
            if run.ctx.cancelled:
                return Ended.CANCELLED
        outcome = await self._outcome(run)
        if isinstance(outcome, Failure | Ended) or run.ctx.cancelled:
            return outcome
        try:
            await run.files.upload(self.transport)
        except (Conflict, NotFound) as exc:
            run.cancel(f"a result was refused: {exc}")
            return Ended.CANCELLED
        except (ResultRefused, OSError, ValueError) as exc:
            return Failure("result_upload", str(exc))
        return outcome

    async def _outcome(self, run: Run) -> Any:
        """The handler's result, the :class:`Failure` it raised, or how the run :class:`Ended`."""
        if self._handler_is_async:
            return await self._async_outcome(run)
        run.running = future = in_thread(self.handler, run.ctx, f"job-{run.job.id}")
        await _settled(future)  # abandon() cancels it: either way it is done
        run.running = None
        if run.abandoned.is_set():
            return Ended.RETURNED
        if run.ctx.cancelled or future.cancelled():
            return Ended.CANCELLED
        exc = future.exception()
        return future.result() if exc is None else _failure(exc)

    async def _async_outcome(self, run: Run) -> Any:
        """An ``async def`` handler run in this task, which :meth:`Run.cancel` and
        :meth:`Run.abandon` cancel while the handler runs; the cancellations they made are taken
        back once it is done, and any other (the loop closing) goes on up."""
        task = asyncio.current_task()
        assert task is not None
        run.running = task
        raised: BaseException | None = None
        try:
            result = await self.handler(run.ctx)
        except BaseException as exc:  # the handler's: _failure decides (its errors fail the job)
            if isinstance(exc, asyncio.CancelledError) and not run.interruptions:
                raise
            raised = exc
        finally:
            run.running = None
            for _ in range(run.interruptions):
                task.uncancel()
        if run.abandoned.is_set():
            return Ended.RETURNED
        if run.ctx.cancelled or isinstance(raised, asyncio.CancelledError):
            return Ended.CANCELLED
        return result if raised is None else _failure(raised)

    async def _finish(self, run: Run, outcome: Any) -> None:
        """Record the outcome (complete, fail, hand back) and log one line for the job; a refusal
        means the attempt is no longer this worker's."""
        job, took = run.job, run.seconds()
        line = _JobLine(job, took, self.worker_id, self.metrics)
        if outcome is Ended.CANCELLED:
            self.counts["cancelled"] += 1
            reason = run.ctx.cancel_reason
            ended = "timed_out" if reason in _TIMED_OUT else "cancelled"
            line.log(logging.INFO, ended, "%s after %.3fs (%s), not completed", ended.replace("_", " "),
                     took, reason, error=reason)  # fmt: skip
            return
        try:
            if outcome is Ended.RETURNED:
                await self.transport.hand_back(job)
                self.counts["returned"] += 1
                line.log(logging.INFO, "returned", "handed back after %.3fs (the worker is stopping)", took)
            elif isinstance(outcome, Failure):
                await self._until_recorded(run, lambda: self.transport.fail(job, outcome))
                self.counts["failed"] += 1
                error = f"{outcome.kind}: {_short(outcome.message)}"
                line.log(logging.WARNING, "failed", "failed after %.3fs: %s", took, error, error=error)
                log.debug("%s: %s", _named(job), outcome.traceback)
            else:
                output = run.ctx._output if outcome is None else outcome
                await self._until_recorded(run, lambda: self.transport.complete(job, output))
                self.counts["completed"] += 1
                line.log(logging.INFO, "completed", "completed in %.3fs", took)
        except (Conflict, NotFound) as exc:
            self.counts["cancelled"] += 1
            line.log(logging.INFO, "not_recorded", "not recorded after %.3fs, the attempt is no longer "
                     "this worker's: %s", took, exc, error=str(exc))  # fmt: skip
        except ClientError as exc:
            line.log(logging.ERROR, "not_recorded", "not recorded (%s); its timeout will recover it", exc,
                     error=str(exc))  # fmt: skip

    async def _until_recorded(self, run: Run, send: Callable[[], Awaitable[None]]) -> None:
        """Send a completion or failure, and send it again, with backoff, while the ledger cannot be
        reached (the server or Redis down or stalled), until the attempt's deadline has passed: then
        the ledger times the attempt out and the worker gives up (the last error is raised, logged).
        The pauses are timed so that one try goes out :data:`LAST_RESEND` before the deadline (see
        :func:`_resend_pause`).  A resend after the first took effect unseen answers as the first did
        (no event appended)."""
        deadline = run.deadline(RESEND_LIMIT)
        pause, tries = RESEND_PAUSE[0], 1
        while True:
            try:
                if tries > 1 and self.metrics is not None:
                    self.metrics.resent(run.job.queue)
                await send()
                if tries > 1:
                    log.info("%s: recorded at try %d", _named(run.job), tries)
                return
            except (Unavailable, ServerError) as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    log.error(
                        "%s: giving up after %d tries, the attempt's deadline has passed: %s",
                        _named(run.job), tries, exc,
                    )  # fmt: skip
                    raise
                if tries == 1:
                    log.warning("%s: not recorded yet, sending again for up to %.1fs: %s",
                                _named(run.job), left, exc)  # fmt: skip
                await asyncio.sleep(_resend_pause(pause, left))
                pause, tries = min(pause * 2, RESEND_PAUSE[1]), tries + 1

    async def _heartbeats(self, run: Run) -> None:
        interval = await self._heartbeat_interval(run)
        if not interval:
            return
        while not await _wait(run.done, interval):
            try:
                sent = time.monotonic()
                await self.transport.heartbeat(run.job)
                run.alive_at = sent
            except (Conflict, NotFound) as exc:
                log.info("%s: heartbeat refused: %s", _named(run.job), exc)
                run.cancel("heartbeat refused")
                return
            except ClientError as exc:
                log.warning("%s: heartbeat not sent: %s", _named(run.job), exc)

    async def _heartbeat_interval(self, run: Run) -> float | None:
        """Seconds between heartbeats: the configured interval, else a third of the job's
        ``heartbeat_timeout`` (read once, kept in ``run``); None when the job has heartbeats off."""
        if self.heartbeat_interval is not None:
            return self.heartbeat_interval
        job, timeout = run.job, run.heartbeat_timeout
        if timeout is None:
            try:
                timeout = run.heartbeat_timeout = await self.transport.heartbeat_timeout(job)
            except ClientError as exc:
                log.warning("%s: heartbeat_timeout not read, no heartbeats: %s", _named(job), exc)
                return None
        return timeout / 3 if timeout > 0 else None

    # Stopping

    async def _drain(self) -> None:
        """Give running handlers the grace period, then hand back the jobs of the rest."""
        if self._runs and not self._hurry.is_set():
            log.info("stopping: waiting up to %gs for %d running job(s)", self.grace_period, len(self._runs))
        assert self._loop is not None
        deadline = self._loop.time() + self.grace_period
        hurry = asyncio.ensure_future(self._hurry.wait())
        try:
            while self._runs and not self._hurry.is_set() and (left := deadline - self._loop.time()) > 0:
                await asyncio.wait({hurry, *self._runs}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hurry.cancel()
        for run in self._runs.values():
            run.abandon()
        if self._runs:
            await asyncio.wait(set(self._runs), timeout=FINISH_TIMEOUT)


async def _settled(future: asyncio.Future[Any]) -> None:
    """Wait until ``future`` is done, whatever its outcome, without raising it."""
    if future.done():
        return
    settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def done(_: asyncio.Future[Any]) -> None:
        if not settled.done():
            settled.set_result(None)

    future.add_done_callback(done)
    await settled


def _failure(exc: BaseException) -> Failure:
    """The failure of a handler's error (any error of a handler fails its job); other exceptions
    (KeyboardInterrupt, ...) are raised."""
    if isinstance(exc, Exception | SystemExit):
        return Failure.of(exc)
    raise exc


def _outcome_name(outcome: Any) -> str:
    """What a run's outcome makes of its job: completed, failed, cancelled or returned."""
    if isinstance(outcome, Ended):
        return outcome.value
    return "failed" if isinstance(outcome, Failure) else "completed"


def _job_spans(tracing: bool | None) -> JobSpans | None:
    """What makes the jobs' spans, or None when the worker does not trace: ``tracing``, or left
    None, whether the process has set up OpenTelemetry (a tracer provider of its own: a worker never
    imports OpenTelemetry itself unless told to trace, though a library may have imported it)."""
    if tracing is None:
        trace = sys.modules.get("opentelemetry.trace")
        tracing = trace is not None and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    if not tracing:
        return None
    from jobledger.worker.job_spans import JobSpans

    return JobSpans()


def _is_async(handler: Handler) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__)


def _named(job: Assignment) -> str:
    return f"job {job.id} ({job.queue}, attempt {job.attempt})"


class _JobLine:
    """The one line logged for a job: its message after the job's :func:`_named`, and its fields
    (:data:`~jobledger.runtime.logs.JOB_FIELDS`: never held back as a repeat, the object's own
    fields in JSON), and the job's outcome counted in the worker's metrics if it keeps them."""

    __slots__ = ("actor", "job", "metrics", "took")

    def __init__(self, job: Assignment, took: float, actor: str, metrics: WorkerMetrics | None) -> None:
        self.job, self.took, self.actor, self.metrics = job, took, actor, metrics

    def log(self, level: int, outcome: str, what: str, *args: Any, error: str | None = None) -> None:
        """Log ``what`` % ``args`` as ``log.log`` would, but without looking up the caller's file and
        line, which no line of a job shows: that walk up the stack was a good part of the cost of
        the line each job logs."""
        if self.metrics is not None:
            self.metrics.ended(self.job.queue, outcome, self.took)
        if not log.isEnabledFor(level):
            return
        job = self.job
        fields: dict[str, Any] = {
            "job": job.id, "queue": job.queue, "attempt": job.attempt, "outcome": outcome,
            "duration_ms": round(self.took * 1000, 3), "actor": self.actor,
        }  # fmt: skip
        if error is not None:
            fields["error"] = error
        record = log.makeRecord(
            log.name, level, __file__, 0, "%s: " + what, (_named(job), *args), None,
            extra={JOB_FIELDS: fields},
        )  # fmt: skip
        log.handle(record)


def _transport(
    kind: str | Transport, url: str | None, redis_url: str | None, namespace: str, token: str | None = None,
    blobs: BlobStore | None = None, partitions: int | None = None,
) -> Transport:  # fmt: skip
    if not isinstance(kind, str):
        return kind
    if kind == "http":
        return HttpTransport(url, token=token)
    if kind == "redis":
        if not redis_url:
            raise ValueError("the redis transport needs redis_url")
        return RedisTransport(redis_url, namespace, blobs, partitions)
    raise ValueError(f"unknown transport {kind!r}: use 'http' or 'redis'")


async def _wait(event: asyncio.Event, seconds: float) -> bool:
    """Wait for ``event`` at most ``seconds``; whether it was set."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        pass
    return event.is_set()


def _short(text: str, limit: int = 300) -> str:
    """``text`` for a log line: its first ``limit`` characters (the whole is in the job's error)."""
    return text if len(text) <= limit else text[:limit] + "..."
