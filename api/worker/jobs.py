"""One job in a worker's hands: what its handler sees (:class:`JobContext`), the output it reports
while it runs, how it is told its attempt is over, and how a plain-function handler runs in a
thread of its own."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobledger.client.calls import UNSET
from jobledger.client.errors import ClientError
from jobledger.worker.files import JobFiles
from jobledger.worker.transports import Assignment, Transport
from jobledger.worker.watch import Watching

Handler = Callable[["JobContext"], Any]


class JobContext:
    """What a handler gets: the job it runs, a way to report output while it runs, and whether its
    attempt is still the job's running one."""

    def __init__(
        self, job: Assignment, worker: str, post: Callable[[Any], None], files: JobFiles, transport: Transport
    ) -> None:
        self.id = job.id
        self.attempt = job.attempt
        self.queue = job.queue
        self.input = job.input
        self.worker = worker
        #: True once this attempt is over elsewhere: the job was cancelled, deleted, timed out, or
        #: ended by another client.  Nothing the handler reports will be recorded; a plain-function
        #: handler should return soon (an async one is cancelled).  Learned within about a second.
        self.cancelled = False
        #: Why: the event that ended the attempt (e.g. ``job_cancelled``), or the job's status.
        self.cancel_reason: str | None = None
        #: The job's input files, as the ledger names them (each downloaded into :attr:`dir`).
        self.files = job.files
        self._output: Any = UNSET
        self._post = post
        self._files = files
        self._job, self._transport = job, transport

    async def timeout(self) -> float:
        """The job's ``timeout`` in seconds (0: none), read from the ledger (``async`` handlers)."""
        return await self._transport.run_timeout(self._job)

    @property
    def dir(self) -> Path:
        """The job's own directory: its input files, downloaded and checked before the handler runs,
        and room for what it writes.  Removed once the job is recorded."""
        return self._files.dir

    def add_result(
        self, path: str | os.PathLike[str], name: str | None = None, media_type: str | None = None
    ) -> str:
        """Upload the file at ``path`` (relative: in :attr:`dir`) as the result ``name`` (default: its
        file name) once the handler has returned, before the job completes; the name.  ``media_type``
        defaults to what the name suggests.  Files written into :attr:`dir` are not results unless
        named here (``jobledger worker --exec`` uploads every file written)."""
        return self._files.add_result(path, name, media_type)

    @property
    def lost(self) -> bool:
        """The same as :attr:`cancelled` (its earlier name)."""
        return self.cancelled

    def set_output(self, value: Any) -> None:
        """Record ``value`` as the job's output now, from the handler's thread or its coroutine.

        Sent in the background (the newest value wins); kept as the final output if the handler
        returns None.
        """
        self._output = value
        self._post(value)


class _Outbox:
    """The latest output a handler set, sent by one background task so updates stay in order."""

    def __init__(self, transport: Transport, job: Assignment, log: Any) -> None:
        self._transport, self._job, self._log = transport, job, log
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
                self._log.warning("job %d: output not recorded: %s", self._job.id, exc)


class Run:
    """One job in hand: its context, what runs its handler, its output sender, and how it ends when
    the handler does not: cancelled elsewhere (:meth:`cancel`) or given up by the worker
    (:meth:`abandon`)."""

    def __init__(
        self, job: Assignment, worker: str, transport: Transport, log: Any,
        files_dir: Path | None = None, upload_written: bool = False,
    ) -> None:  # fmt: skip
        self.job = job
        self.transport = transport
        self.log = log
        self.loop = asyncio.get_running_loop()
        self.started = time.monotonic()
        #: When the ledger last heard of this attempt (its fetch, its last heartbeat), and the job's
        #: heartbeat_timeout once known: the attempt's deadline as this worker knows it.
        self.alive_at = job.fetched_at or self.started
        self.heartbeat_timeout = job.heartbeat_timeout
        self.files = JobFiles(job, files_dir, upload_written)
        self.ctx = JobContext(job, worker, self._post, self.files, transport)
        self.done = asyncio.Event()
        self.abandoned = asyncio.Event()
        #: What stops the handler once cancelled, while it runs: the future of a plain function's
        #: thread, or the worker's own task, which an ``async def`` handler runs in (no task of
        #: its own: most handlers end without waiting for anything).
        self.running: asyncio.Future[Any] | None = None
        #: How many times :attr:`running`, a worker's task, was cancelled to stop the handler (the
        #: worker takes them back once the handler is done, and goes on with the job).
        self.interruptions = 0
        self.outbox: _Outbox | None = None
        #: The watch of the job's attempt, once the worker watches it (see ``WATCH_AFTER``).
        self.watching: Watching | None = None

    def cancel(self, reason: str) -> None:
        """The attempt is over elsewhere: tell the handler (an async one is cancelled)."""
        if self.ctx.cancelled or self.done.is_set():
            return
        self.ctx.cancelled, self.ctx.cancel_reason = True, reason
        if self.running is not None and not isinstance(self.running, ThreadFuture):
            self._interrupt(self.running)

    def abandon(self) -> None:
        """Stop waiting for the handler, whose job the worker hands back (an async handler is
        cancelled; a thread is left to end with the process)."""
        if self.running is not None and not self.running.done():
            self.abandoned.set()
            self._interrupt(self.running)

    def _interrupt(self, running: asyncio.Future[Any]) -> None:
        if running.cancel() and not isinstance(running, ThreadFuture):
            self.interruptions += 1

    def deadline(self, otherwise: float) -> float:
        """``time.monotonic()`` past which the ledger may time this attempt out (its heartbeat
        deadline); ``otherwise`` seconds from now when the job has heartbeats off."""
        if self.heartbeat_timeout:
            return self.alive_at + self.heartbeat_timeout
        return time.monotonic() + otherwise

    def seconds(self) -> float:
        return time.monotonic() - self.started

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
            self.outbox = _Outbox(self.transport, self.job, self.log)
        self.outbox.put(value)


class ThreadFuture(asyncio.Future[Any]):
    """The result of a handler running in a thread (cancelling it stops the waiting, not the thread)."""


def in_thread(handler: Handler, ctx: JobContext, name: str) -> ThreadFuture:
    """Run a plain-function handler in a daemon thread of its own; a future of its result.

    A daemon thread, not an executor's: a handler that outlives the grace period must not keep the
    process from exiting.
    """
    loop = asyncio.get_running_loop()
    future = ThreadFuture(loop=loop)

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

    # in a copy of this task's context: what the handler's own spans take as their parent (its job's)
    threading.Thread(target=contextvars.copy_context().run, args=(target,), name=name, daemon=True).start()
    return future
