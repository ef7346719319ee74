"""The worker: runs a handler over jobs of one or more queues, with heartbeats, fencing and a
graceful stop.

``Worker(handler, ["emails"], concurrency=4).run()`` fetches jobs (queues tried in the order given),
calls ``handler(job)`` with a :class:`JobContext` for each, and completes the job with what the
handler returns, or fails it if the handler raises.  While a handler runs, heartbeats go out in the
background at a third of the job's ``heartbeat_timeout``.  A handler may be ``async def`` (run on
the worker's event loop) or a plain function (run in a thread of its own, so it cannot block the
heartbeats).  Every update names the attempt the job was fetched as, so a worker whose job timed
out and went to another worker can never complete, fail or heartbeat it.

Stopping (SIGTERM / SIGINT, or :meth:`Worker.stop`): no new job is fetched; running handlers get
``grace_period`` seconds to finish; the jobs of those that have not are failed, so the queue's
retries hand them to another worker.  (There is no transition from running back to queued; with no
retries left such a job ends failed, visible and requeueable.)  A second stop skips what is left of
the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from api.client.calls import UNSET
from api.client.errors import ClientError, Conflict, NotFound
from api.worker_transports import Assignment, Failure, HttpTransport, RedisTransport, Transport
from ledger.keys import DEFAULT_NAMESPACE

log = logging.getLogger("jobledger.worker")

Handler = Callable[["JobContext"], Any]

#: The error kind of a job handed back because the worker stopped before its handler finished.
SHUTDOWN_KIND = "WorkerShutdown"
#: Seconds to wait for the updates of abandoned jobs to reach the server, after the grace period.
FINISH_TIMEOUT = 10.0


class JobContext:
    """What a handler gets: the job it runs, and a way to report output while it runs."""

    def __init__(self, job: Assignment, worker: str, post: Callable[[Any], None]) -> None:
        self.id = job.id
        self.attempt = job.attempt
        self.queue = job.queue
        self.input = job.input
        self.worker = worker
        #: True once a heartbeat was refused (the attempt timed out, or the job was cancelled or
        #: deleted): nothing the handler reports will be recorded, so it may as well stop.
        self.lost = False
        self._output: Any = UNSET
        self._post = post

    def set_output(self, value: Any) -> None:
        """Record ``value`` as the job's output now, from the handler's thread or its coroutine.

        Sent in the background (the newest value wins); kept as the final output if the handler
        returns None.
        """
        self._output = value
        self._post(value)


class _Outbox:
    """The latest output a handler set, sent by one background task so updates stay in order."""

    def __init__(self, transport: Transport, job: Assignment) -> None:
        self._transport, self._job = transport, job
        self._value: Any = UNSET
        self._wake = asyncio.Event()
        self._closed = False
        self._task = asyncio.create_task(self._send_loop())

    def put(self, value: Any) -> None:
        self._value = value
        self._wake.set()

    async def close(self) -> None:
        """Stop sending: the final output goes with the job's completion."""
        self._closed = True
        self._wake.set()
        await self._task

    async def _send_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            value, self._value = self._value, UNSET
            try:
                await self._transport.set_output(self._job, value)
            except ClientError as exc:
                log.warning("job %d: output not recorded: %s", self._job.id, exc)


class _Run:
    """One job in hand: its context, its handler's future, its output sender, and whether the
    worker gave up on it."""

    def __init__(self, job: Assignment, worker: str, transport: Transport) -> None:
        self.job = job
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        self.ctx = JobContext(job, worker, self._post)
        self.done = asyncio.Event()
        self.future: asyncio.Future[Any] | None = None
        self.outbox: _Outbox | None = None
        self.abandoned = False

    def abandon(self) -> None:
        """Stop waiting for the handler (its thread, if any, is left to end with the process)."""
        if self.future is not None and not self.future.done():
            self.abandoned = True
            self.future.cancel()

    async def close_outbox(self) -> None:
        if self.outbox is not None:
            await self.outbox.close()

    def _post(self, value: Any) -> None:
        """Called from the handler, in any thread: send the output from the loop."""
        self.loop.call_soon_threadsafe(self._send, value)

    def _send(self, value: Any) -> None:
        if self.done.is_set():  # the handler has returned: its output goes with the completion
            return
        if self.outbox is None:
            self.outbox = _Outbox(self.transport, self.job)
        self.outbox.put(value)


class Worker:
    """Run ``handler`` over the jobs of ``queues``, ``concurrency`` at a time.

    ``transport``: ``"http"`` (the server at ``url``, default ``$JOBLEDGER_URL`` or
    http://127.0.0.1:8023), ``"redis"`` (the ledger at ``redis_url`` in ``namespace``, directly), or
    a :class:`~api.worker_transports.Transport`.  ``heartbeat_interval`` (seconds) replaces reading
    each job's ``heartbeat_timeout``; ``poll_interval`` is the (first, longest) pause when every
    queue is empty, doubling in between.
    """

    def __init__(
        self,
        handler: Handler,
        queues: str | Sequence[str],
        *,
        concurrency: int = 1,
        transport: str | Transport = "http",
        url: str | None = None,
        redis_url: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        worker_id: str | None = None,
        heartbeat_interval: float | None = None,
        grace_period: float = 30.0,
        poll_interval: tuple[float, float] = (0.05, 1.0),
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.handler = handler
        self.queues = [queues] if isinstance(queues, str) else list(queues)
        self.concurrency = concurrency
        self.transport = _transport(transport, url, redis_url, namespace)
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.heartbeat_interval = heartbeat_interval
        self.grace_period = grace_period
        self.poll_interval = poll_interval
        self.counts = {"completed": 0, "failed": 0, "abandoned": 0}
        #: Set once :meth:`run_async` is under way (so :meth:`stop` can reach it from another thread).
        self.started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = asyncio.Event()
        self._hurry = asyncio.Event()
        self._runs: dict[asyncio.Task[None], _Run] = {}
        self._fetch_error: str | None = None

    def run(self) -> None:
        """Work until SIGTERM or SIGINT, then stop gracefully.  Blocks; call from the main thread."""
        asyncio.run(self._run_with_signals())

    async def run_async(self) -> None:
        """Work until :meth:`stop` is called, then stop gracefully (see the module's docstring)."""
        self._loop = asyncio.get_running_loop()
        self.started.set()
        try:
            await self._fetch_loop()
            await self._drain()
        finally:
            await self.transport.close()

    def stop(self) -> None:
        """Stop taking jobs and finish (the second call: abandon) those in hand.  Safe from any
        thread and from a signal handler."""
        if self._loop is None:
            self._stopping.set()
        else:
            self._loop.call_soon_threadsafe(self._request_stop)

    def _request_stop(self) -> None:
        if self._stopping.is_set():
            self._hurry.set()
        self._stopping.set()

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
        first, longest = self.poll_interval
        pause = first
        while not self._stopping.is_set():
            await self._wait_for_slot()
            if self._stopping.is_set():
                return
            jobs = await self._fetch(self.concurrency - len(self._runs))
            for job in jobs:
                self._start(job)
            if jobs:
                pause = first
            else:
                await _wait(self._stopping, pause)
                pause = min(pause * 2, longest)

    async def _wait_for_slot(self) -> None:
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            while len(self._runs) >= self.concurrency and not self._stopping.is_set():
                await asyncio.wait({stop, *self._runs}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()

    async def _fetch(self, free: int) -> list[Assignment]:
        """Up to ``free`` jobs, from the queues in order; a queue that errs is skipped (and logged
        once until the error changes)."""
        jobs: list[Assignment] = []
        for queue in self.queues:
            if len(jobs) >= free:
                break
            try:
                jobs += await self.transport.fetch(queue, free - len(jobs), self.worker_id)
                self._fetch_error = None
            except ClientError as exc:
                if str(exc) != self._fetch_error:
                    log.warning("cannot fetch from queue %r: %s", queue, exc)
                self._fetch_error = str(exc)
        return jobs

    def _start(self, job: Assignment) -> None:
        run = _Run(job, self.worker_id, self.transport)
        task = asyncio.create_task(self._work(run), name=f"job-{job.id}")
        self._runs[task] = run
        task.add_done_callback(self._runs.pop)

    # One job

    async def _work(self, run: _Run) -> None:
        beats = None
        if self.heartbeat_interval is not None or run.job.heartbeat_timeout != 0:
            beats = asyncio.create_task(self._heartbeats(run))
        try:
            outcome = await self._outcome(run)
        finally:
            run.done.set()
            await run.close_outbox()
        await self._finish(run, outcome)
        if beats is not None:
            await beats

    async def _outcome(self, run: _Run) -> Any:
        """The handler's result, or the :class:`Failure` it raised (or that the shutdown made)."""
        try:
            if inspect.iscoroutinefunction(self.handler):
                run.future = asyncio.ensure_future(self.handler(run.ctx))
            else:
                run.future = _in_thread(self.handler, run.ctx, f"job-{run.job.id}")
            return await run.future
        except asyncio.CancelledError:
            if not run.abandoned:
                raise
            return Failure(SHUTDOWN_KIND, "the worker stopped before the handler finished")
        except (Exception, SystemExit) as exc:  # noqa: BLE001 (any error of the handler fails its job)
            log.warning("job %d attempt %d failed: %s: %s", run.job.id, run.job.attempt,
                        type(exc).__name__, exc)  # fmt: skip
            return Failure(type(exc).__name__, str(exc))

    async def _finish(self, run: _Run, outcome: Any) -> None:
        """Complete or fail the job; a refusal means the attempt is no longer ours (logged)."""
        job = run.job
        try:
            if isinstance(outcome, Failure):
                await self.transport.fail(job, outcome)
                self.counts["abandoned" if outcome.kind == SHUTDOWN_KIND else "failed"] += 1
            else:
                output = run.ctx._output if outcome is None else outcome
                await self.transport.complete(job, output)
                self.counts["completed"] += 1
        except (Conflict, NotFound) as exc:
            log.warning("job %d attempt %d is no longer this worker's: %s", job.id, job.attempt, exc)
        except ClientError as exc:
            log.error("job %d attempt %d not finished (%s); its timeout will recover it",
                      job.id, job.attempt, exc)  # fmt: skip

    async def _heartbeats(self, run: _Run) -> None:
        interval = await self._heartbeat_interval(run.job)
        if not interval:
            return
        while not await _wait(run.done, interval):
            try:
                await self.transport.heartbeat(run.job)
            except (Conflict, NotFound) as exc:
                run.ctx.lost = True
                log.warning("job %d attempt %d lost: %s", run.job.id, run.job.attempt, exc)
                return
            except ClientError as exc:
                log.warning("job %d: heartbeat not sent: %s", run.job.id, exc)

    async def _heartbeat_interval(self, job: Assignment) -> float | None:
        """Seconds between heartbeats: the configured interval, else a third of the job's
        ``heartbeat_timeout`` (read once); None when the job has heartbeats off."""
        if self.heartbeat_interval is not None:
            return self.heartbeat_interval
        timeout = job.heartbeat_timeout
        if timeout is None:
            try:
                timeout = await self.transport.heartbeat_timeout(job)
            except ClientError as exc:
                log.warning("job %d: heartbeat_timeout not read, no heartbeats: %s", job.id, exc)
                return None
        return timeout / 3 if timeout > 0 else None

    # Stopping

    async def _drain(self) -> None:
        """Give running handlers the grace period, then abandon (fail) the jobs of the rest."""
        if self._runs:
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


def _transport(kind: str | Transport, url: str | None, redis_url: str | None, namespace: str) -> Transport:
    if not isinstance(kind, str):
        return kind
    if kind == "http":
        return HttpTransport(url)
    if kind == "redis":
        if not redis_url:
            raise ValueError("the redis transport needs redis_url")
        return RedisTransport(redis_url, namespace)
    raise ValueError(f"unknown transport {kind!r}: use 'http' or 'redis'")


async def _wait(event: asyncio.Event, seconds: float) -> bool:
    """Wait for ``event`` at most ``seconds``; whether it was set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()


def _in_thread(handler: Handler, ctx: JobContext, name: str) -> asyncio.Future[Any]:
    """Run a plain-function handler in a daemon thread of its own; a future of its result.

    A daemon thread, not an executor's: a handler that outlives the grace period must not keep the
    process from exiting.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (True, handler(ctx))
        except BaseException as exc:  # noqa: BLE001 (handed to the awaiting coroutine, which decides)
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future
