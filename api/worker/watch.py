"""How a worker learns, within about a second, that the attempt it runs is over elsewhere: the job
was cancelled, deleted, timed out, or ended by another client.

The worker starts watching a job once its handler has run for a moment, so short jobs cost nothing.

- Over Redis (:class:`JobWatch`): a subscription to the job on the process's
  :class:`~jobledger.ledger.watch.LedgerWatch`; subscribed first, the job's status and attempt are read once,
  then again each time an event names the job.
- Over HTTP (:class:`QueueFeeds`): per queue with jobs being watched, one ``GET
  /events/stream?queue=Q`` feed, whose events name the jobs they concern; it closes a little after
  the queue's last watched job ends, so a series of long jobs shares one feed.  A job fetched after
  the feed connected is covered by it from its start; one fetched before is read once
  (``GET /job/{id}?fields=status,attempt``) after the feed connected, so nothing falls between.
  No round trip per job while jobs are short, one feed per queue while they are long: cheaper for
  the server than a request per job and second, and cheaper than a feed per job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx2

from jobledger.client import AsyncClient
from jobledger.client.calls import auth_headers
from jobledger.client.errors import ClientError, NotFound
from jobledger.client.models import Event
from jobledger.client.sse import IDLE_READ_TIMEOUT, STREAM_PATH, SseDecoder
from jobledger.ledger.partitions import id_route
from jobledger.ledger.reads import Read
from jobledger.ledger.watch import LedgerWatch, job_topic
from jobledger.worker.commit import AnyLedger

log = logging.getLogger("jobledger.worker")

#: Events after which the attempt a worker runs is over (``job_started``: of another attempt).
ENDS_ATTEMPT = frozenset({
    "job_completed", "job_failed", "job_cancelled", "job_timed_out", "job_deleted", "job_expired",
    "job_requeued", "job_returned", "job_started", "job_ended",
})  # fmt: skip
#: Seconds a queue's feed stays open after its last watched job ended.
LINGER = 5.0
#: Pause (s) before a feed reconnects, doubling up to the second figure.
RECONNECT = (0.2, 5.0)

OnOver = Callable[[str], None]


class Watching(Protocol):
    def close(self) -> None: ...


class JobWatch:
    """One job's attempt, watched on the ledger watch (Redis)."""

    def __init__(
        self, ledger: AnyLedger, watch: LedgerWatch, job_id: int, attempt: int, on_over: OnOver
    ) -> None:
        self._ledger, self._id, self._attempt, self._on_over = ledger, job_id, attempt, on_over
        self._sub = watch.subscribe([job_topic(job_id)])
        self._task = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        while True:
            try:
                status, attempt = await self._ledger.read(_status_and_attempt(self._id))
            except Exception as exc:  # noqa: BLE001 (Redis away: try again on the next wake-up)
                log.debug("job %d: state not read: %s", self._id, exc)
                await self._sub.wait(1.0)
                continue
            reason = _over(status, attempt, self._attempt)
            if reason is not None:
                self._on_over(reason)
                return
            await self._sub.wait(None)

    def close(self) -> None:
        self._task.cancel()
        self._sub.close()


def _status_and_attempt(job_id: int) -> Read[tuple[str | None, int]]:
    def parse(replies: list[Any]) -> tuple[str | None, int]:
        status, attempt = replies[0]
        return (status.decode() if status else None, int(attempt or 0))

    return Read(lambda keys: [("HMGET", keys.job(job_id), "status", "attempt")], parse, id_route(job_id))


def _over(status: str | None, attempt: int, mine: int) -> str | None:
    """Why the attempt ``mine`` is over, given the job's status and attempt; None while it runs."""
    if status is None:
        return "deleted"
    if status != "running":
        return status
    return None if attempt == mine else f"attempt {attempt} started"


class _Watched:
    """A job watched on its queue's feed; :meth:`close` when its handler is done."""

    def __init__(self, feed: _Feed, job_id: int, attempt: int, fetched_at: float, on_over: OnOver) -> None:
        self.feed, self.id, self.attempt = feed, job_id, attempt
        self.fetched_at, self.on_over = fetched_at, on_over

    def close(self) -> None:
        self.feed.remove(self)


class QueueFeeds:
    """One event feed per queue whose jobs are being watched (HTTP)."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        timeout = httpx2.Timeout(10.0, read=IDLE_READ_TIMEOUT)
        self.http = httpx2.AsyncClient(
            base_url=client.url, timeout=timeout, headers=auth_headers(client.token)
        )
        self._feeds: dict[str, _Feed] = {}

    def watch(self, job: Any, on_over: OnOver) -> Watching:
        feed = self._feeds.get(job.queue)
        if feed is None or feed.closed:
            feed = self._feeds[job.queue] = _Feed(self, job.queue)
        return feed.add(job.id, job.attempt, job.fetched_at, on_over)

    async def close(self) -> None:
        for feed in self._feeds.values():
            feed.stop()
        await asyncio.gather(*(f.task for f in self._feeds.values()), return_exceptions=True)
        await self.http.aclose()


class _Feed:
    """``GET /events/stream?queue=Q`` while jobs of the queue are watched (and :data:`LINGER` after)."""

    def __init__(self, feeds: QueueFeeds, queue: str) -> None:
        self.feeds, self.queue = feeds, queue
        self.watched: dict[int, _Watched] = {}
        self.connected_at: float | None = None  # since when the feed has followed without a gap
        self.last_id: str | None = None
        self.closed = False
        self._idle = asyncio.Event()
        self._checks: set[asyncio.Task[None]] = set()
        self.task = asyncio.create_task(self._run())

    def add(self, job_id: int, attempt: int, fetched_at: float, on_over: OnOver) -> _Watched:
        watched = _Watched(self, job_id, attempt, fetched_at, on_over)
        self.watched[job_id] = watched
        self._idle.clear()
        if self.connected_at is not None and fetched_at <= self.connected_at:
            check = asyncio.create_task(self._check([watched]))  # it started before the feed's first event
            self._checks.add(check)
            check.add_done_callback(self._checks.discard)
        return watched

    def remove(self, watched: _Watched) -> None:
        if self.watched.get(watched.id) is watched:
            del self.watched[watched.id]
        if not self.watched:
            self._idle.set()

    def stop(self) -> None:
        self.closed = True
        self.task.cancel()

    async def _run(self) -> None:
        lingering = asyncio.create_task(self._linger())
        pause = RECONNECT[0]
        try:
            while True:
                try:
                    await self._follow()
                    pause = RECONNECT[0]
                except Exception as exc:  # noqa: BLE001 (a feed that breaks is followed again)
                    log.debug("queue %r: event feed interrupted: %s", self.queue, exc)
                await asyncio.sleep(pause)
                pause = min(pause * 2, RECONNECT[1])
        finally:
            self.closed = True
            lingering.cancel()

    async def _linger(self) -> None:
        """Close the feed once it has watched nothing for :data:`LINGER` seconds."""
        while True:
            await self._idle.wait()
            await asyncio.sleep(LINGER)
            if self._idle.is_set():
                self.stop()
                return

    async def _follow(self) -> None:
        decoder = SseDecoder(self.last_id)
        resuming = self.last_id is not None and self.connected_at is not None
        params = {"queue": self.queue}
        async with self.feeds.http.stream(
            "GET", STREAM_PATH, params=params, headers=decoder.headers()
        ) as response:
            if response.status_code != 200:
                await response.aread()
                raise ClientError(f"event feed answered {response.status_code}", response.status_code)
            if not resuming:  # a new start: what happened before it is read once
                self.connected_at = time.monotonic()
                await self._check([w for w in self.watched.values() if w.fetched_at <= self.connected_at])
            async for line in response.aiter_lines():
                event = decoder.feed(line)
                self.last_id = decoder.last_id
                if event is not None:
                    self._event(event)

    def _event(self, event: Event) -> None:
        watched = self.watched.get(event.job or 0)
        if watched is None or event.type not in ENDS_ATTEMPT:
            return
        if event.type == "job_started" and event.data.get("attempt") == watched.attempt:
            return
        watched.on_over(event.type)

    async def _check(self, jobs: list[_Watched]) -> None:
        """Read each job's status once: those whose attempt ended before the feed connected."""
        for watched in jobs:
            try:
                fields = await self.feeds.client.get_fields(watched.id, "status", "attempt")
            except NotFound:
                watched.on_over("deleted")
                continue
            except ClientError as exc:
                log.debug("job %d: state not read: %s", watched.id, exc)
                continue
            reason = _over(fields.get("status"), int(fields.get("attempt") or 0), watched.attempt)
            if reason is not None:
                watched.on_over(reason)
