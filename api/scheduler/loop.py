"""The scheduler: just another client of the ledger.

Its checks are ordinary commands (``check_releases`` of scheduled jobs, ``check_timeouts`` of
running jobs, ``check_queued`` against max_queued_time, ``check_retries``, ``check_expiry``, and the
launcher checks of :mod:`jobledger.ledger.launchers`); each reads only the due part of a deadline set and
re-checks the job inside its script, so any number of schedulers can run at once and a job still
times out, retries or expires once.  A check runs in batches until less than a full batch was due.
Its commands run as the actor ``scheduler``: the events they append record it.

When it runs them: every deadline is kept within about a second of its time, whatever the check
intervals.  A round reads the head (the earliest deadline) of every due set in one pipelined read,
runs the checks whose head has come, and then sleeps until the earliest head.  It is woken early by
any new event of the ledger (it subscribes to the process's :class:`~jobledger.ledger.watch.LedgerWatch`), as
an event may bring a nearer deadline; woken, it reads the heads again, at most once every
:data:`WAKE_THROTTLE` seconds however busy the ledger.  The check intervals of the ``[server]``
config (the shortest of them) bound the sleep: the heads are read at least that often even if no
event comes.  Idle, the scheduler costs that one read per interval (30 s by default) beside the
watch's blocking read.  @event launchers follow the ledger on each wake-up; on a ledger split into
partitions, a partition's loop is woken by the events of the other partitions its @event launchers
follow, too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jobledger.blobs import open_store
from jobledger.blobs.archive import BlobArchive
from jobledger.blobs.collector import SweepSettings, collect_loop, sweep_settings
from jobledger.blobs.store import BlobStore
from jobledger.ledger import commands
from jobledger.ledger.calls import Call
from jobledger.ledger.clock import Clock
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.events import SCHEDULER
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger, Partitioned, runners_of
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import score_pairs
from jobledger.ledger.runner import AsyncLedger, Ledger, Steps
from jobledger.ledger.tasks import cancel_and_wait
from jobledger.ledger.watch import LedgerWatch, Subscription, Topic, partition_topic
from jobledger.replay.archive.writer import ArchiveSettings, archive_loop, archive_settings
from jobledger.scheduler import launchers as launcher_checks
from jobledger.scheduler.sealer import SealSettings, seal_loop, seal_settings
from jobledger.scheduler.state import SchedulerState

if TYPE_CHECKING:
    from jobledger.runtime.config import Config

log = logging.getLogger("jobledger.scheduler")

BATCH = 500
#: What a check handled: job ids, or Idempotency-Keys (the idempotency check).
Handled = list[Any]
Check = Callable[[int], Call[Handled]]
CHECKS: dict[str, Check] = {
    "releases": commands.check_releases,
    "timeouts": commands.check_timeouts,
    "queued": commands.check_queued,
    "retries": commands.check_retries,
    "expiry": commands.check_expiry,
    "idempotency": commands.check_idempotency,
}
#: The deadline set each check reads its due work from.
DEADLINES: dict[str, str] = {
    "releases": "due_release",
    "timeouts": "due_run",
    "queued": "due_queued",
    "retries": "due_retry",
    "expiry": "due_expire",
    "idempotency": "due_idempotency",
}
#: Every due set whose head a round reads: the checks' and the launchers' (next firing times).
HEADS: dict[str, str] = {**DEADLINES, "launchers": "due_launch"}
#: Seconds between two reads of the heads when events keep waking the scheduler.
WAKE_THROTTLE = 0.1
#: Milliseconds past a deadline the scheduler wakes, so that the check's clock has passed it.
DUE_MARGIN_MS = 2
#: Pause (s) after a round failed, doubling up to RETRY_MAX.
RETRY_FIRST, RETRY_MAX = 0.5, 2.0

#: The head of a due set: (member, deadline in ms).
Head = tuple[str, int]


def anything_due(name: str, now: int) -> Read[bool]:
    """Whether the check ``name`` has work due by ``now``: one ZRANGE of its deadline set, LIMIT 1.
    A check runs its script only when this says so, so an idle check costs the server one O(log N)
    read instead of a script call (which builds its Lua functions each time).  The
    script decides again on its own clock; work that falls due in between waits for the next round."""
    template = DEADLINES[name]
    return Read(
        lambda k: [("ZRANGE", k.build(template), "-inf", now, "BYSCORE", "LIMIT", 0, 1)],
        lambda r: bool(r[0]),
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def due_heads() -> Read[dict[str, Head | None]]:
    """The earliest entry of every due set (:data:`HEADS`), None for an empty set: one pipelined
    ``ZRANGE key 0 0 WITHSCORES`` per set."""
    names = list(HEADS)

    def head(reply: list[Any]) -> Head | None:
        pairs = score_pairs(reply)
        if not pairs:
            return None
        member, score = pairs[0]
        return _text(member), int(score)

    def parse(replies: list[Any]) -> dict[str, Head | None]:
        return {name: head(reply) for name, reply in zip(names, replies, strict=True)}

    return Read(lambda k: [("ZRANGE", k.build(HEADS[n]), 0, 0, "WITHSCORES") for n in names], parse)


def _drain_steps(name: str, batch: int) -> Steps[Handled]:
    """The check ``name`` in batches until less than a full batch was due; the ids it handled."""
    done: Handled = []
    while True:
        ids: Handled = yield CHECKS[name](batch)
        done += ids
        if len(ids) < batch:
            return done


def _tick_steps(clock: Clock, batch: int) -> Steps[dict[str, Handled]]:
    out: dict[str, Handled] = {}
    for name in CHECKS:
        due = yield anything_due(name, clock())
        out[name] = (yield from _drain_steps(name, batch)) if due else []
    out["events"], out["launchers"] = yield from launcher_checks.launcher_steps({}, clock, batch)
    return out


def check(ledger: Ledger | Partitioned, name: str, batch: int = BATCH) -> Handled:
    """One check, to the end of what is due now (on each partition in turn); the ids it handled."""
    handled: Handled = []
    for runner in runners_of(ledger):
        runner = runner.as_actor(SCHEDULER)
        if runner.read(anything_due(name, runner.clock())):
            handled += runner.drive(_drain_steps(name, batch))
    return handled


def tick(ledger: Ledger | Partitioned, batch: int = BATCH) -> dict[str, Handled]:
    """Run every check once (on each partition in turn), to the end of what is due now; the ids each
    check handled.  The same steps as a round of :func:`run` (which reads every due set's head
    instead of asking each)."""
    out: dict[str, Handled] = {}
    for runner in runners_of(ledger):
        for name, handled in runner.as_actor(SCHEDULER).drive(_tick_steps(runner.clock, batch)).items():
            out[name] = out.get(name, []) + handled
    return out


class _Deadlines:
    """The scheduler's loop (see the module).  On a ledger split into partitions, its @event
    launchers follow the events of other partitions too, through ``router``; they wake it."""

    def __init__(
        self,
        ledger: AsyncLedger,
        every: dict[str, int],
        state: SchedulerState,
        partition: int = 0,
        router: AsyncPartitioned | None = None,
    ) -> None:
        self.ledger = ledger
        self.partition = partition
        self.launchers: AsyncLedger | AsyncPartitioned = ledger if router is None else router
        self.longest = max(min(every.values(), default=1000), 10) / 1000
        self.state = state
        self.positions: dict[int, str] = {}  # how far the event check has read for each @event launcher
        self.read: launcher_checks.SourcesRead = {}  # and in the other partitions' streams it follows
        self.follow = True  # whether @event launchers have events to read (at start, and when woken)
        #: heads whose check left them in place (a stale entry): name -> (head, until when ignored)
        self.stale: dict[str, tuple[Head, float]] = {}

    def _topics(self) -> frozenset[Topic]:
        """What wakes the loop: its partition's events, and those of the partitions followed."""
        return frozenset(partition_topic(p) for p in {self.partition, *self.read})

    async def run(self, watch: LedgerWatch) -> None:
        log.info("scheduler running on ledger '%s': deadlines kept when due, due sets read at least "
                 "every %gs", self.ledger.keys.namespace, self.longest)  # fmt: skip
        pause = RETRY_FIRST
        woken = watch.subscribe(self._topics())
        try:
            while True:
                read_at = time.monotonic()
                try:
                    wait = await self.round()
                    self.state.problem, self.state.rounds, pause = None, self.state.rounds + 1, RETRY_FIRST
                except Unavailable as exc:
                    log.warning("scheduler checks skipped: %s", exc)
                    self.state.problem, wait, pause = str(exc), pause, min(pause * 2, RETRY_MAX)
                    self.follow = True
                except Exception as exc:
                    log.exception("scheduler checks failed")
                    self.state.problem, wait, pause = repr(exc), pause, min(pause * 2, RETRY_MAX)
                    self.follow = True
                if woken.topics != self._topics():
                    woken = _resubscribed(watch, woken, self._topics())
                if await woken.wait(wait):
                    self.follow = True
                    await asyncio.sleep(max(0.0, read_at + WAKE_THROTTLE - time.monotonic()))
        finally:
            woken.close()

    async def round(self) -> float:
        """Run every check whose deadline has come; the seconds to sleep before the next round."""
        heads = await self.ledger.read(due_heads())
        now = self.ledger.clock()
        ran = False
        if self.follow or self._due("launchers", heads["launchers"], now):
            self.follow = False
            acted = await launcher_checks.check_launchers(
                self.launchers, self.positions, partition=self.partition, read=self.read
            )
            if acted:
                log.info("launcher checks acted on %d launchers", acted)
            ran = self._ran("launchers", heads["launchers"], now, acted) or ran
        for name in CHECKS:
            if self._due(name, heads[name], now):
                handled = len(await self.ledger.drive(_drain_steps(name, BATCH)))
                if handled:
                    log.info(
                        "%s check handled %d %s", name, handled, "keys" if name == "idempotency" else "jobs"
                    )
                ran = self._ran(name, heads[name], now, handled) or ran
        if ran:
            return 0.0  # read the heads again: the checks moved them
        return self._sleep(heads, now)

    def _due(self, name: str, head: Head | None, now: int) -> bool:
        if head is None or head[1] > now:
            return False
        stale = self.stale.get(name)
        return stale is None or stale[0] != head or stale[1] <= time.monotonic()

    def _ran(self, name: str, head: Head | None, now: int, handled: int) -> bool:
        """After the check ``name`` ran: whether it did something.  A due head it left in place is
        looked at again only after the longest sleep (so a stale entry never makes a busy loop)."""
        if handled or head is None or head[1] > now:
            self.stale.pop(name, None)
            return bool(handled)
        if name in self.stale and self.stale[name][0] == head:
            log.warning("the %s check leaves %s (due at %d) in its due set", name, head[0], head[1])
            self.stale[name] = (head, time.monotonic() + self.longest)
            return False
        self.stale[name] = (head, 0.0)  # the next round reads the heads again and decides
        return True

    def _sleep(self, heads: dict[str, Head | None], now: int) -> float:
        """Seconds until the earliest deadline not ignored, at most the longest sleep."""
        wait = self.longest
        mono = time.monotonic()
        for name, head in heads.items():
            if head is None:
                continue
            stale = self.stale.get(name)
            if stale is not None and stale[0] == head and stale[1] > mono:
                wait = min(wait, stale[1] - mono)
            else:
                wait = min(wait, (head[1] - now + DUE_MARGIN_MS) / 1000)
        return max(wait, 0.0)


def _resubscribed(watch: LedgerWatch, old: Subscription, topics: frozenset[Topic]) -> Subscription:
    """A subscription to ``topics`` in place of ``old``, closed; a wake-up ``old`` held is kept."""
    new = watch.subscribe(topics)
    if old.woken.is_set():
        new.woken.set()
    old.close()
    return new


def intervals(config: Config) -> dict[str, int]:
    s = config.server
    return {
        "releases": s.timeout_check_interval,
        "timeouts": s.timeout_check_interval,
        "queued": s.timeout_check_interval,
        "retries": s.retry_check_interval,
        "expiry": s.expiry_check_interval,
        "idempotency": s.expiry_check_interval,
    }


async def run(
    ledger: AsyncLedger | OpeningLedger,
    every: dict[str, int],
    archive: ArchiveSettings | None = None,
    *,
    watch: LedgerWatch | None = None,
    state: SchedulerState | None = None,
    blobs: tuple[BlobStore, SweepSettings] | None = None,
    seal: SealSettings | None = None,
) -> None:
    """Run the checks (see the module), their longest sleep the shortest of ``every`` (ms), the
    sealer (:mod:`jobledger.scheduler.sealer`) when ``seal`` is given, and retention if configured,
    until cancelled: on each partition of the ledger, each with its own loop.  ``watch`` is the
    process's follower of the ledger (one is made, and closed after, when None); ``state`` is kept up
    to date for ``/ready``; ``blobs``: the blob store and how its collector sweeps it
    (:mod:`jobledger.blobs.collector`), its bookkeeping in the home partition."""
    state = state or SchedulerState()
    own_watch = watch is None
    follower = LedgerWatch(ledger) if watch is None else watch
    tasks: list[asyncio.Task[Any]] = []
    try:
        if blobs is not None:
            collect = collect_loop(ledger.as_actor(SCHEDULER), *blobs)
            tasks.append(asyncio.create_task(collect, name="blob collector"))
        router = await _partitions(ledger, state)
        split: AsyncPartitioned | None = None
        if isinstance(router, AsyncPartitioned):
            split = router.as_actor(SCHEDULER)
            runners = split.runners
        else:
            runners = [router.as_actor(SCHEDULER)]
        namespace = split.partitioning.namespace if split is not None else runners[0].keys.namespace
        for partition, runner in enumerate(runners):
            deadlines = _Deadlines(runner, every, state, partition, split if len(runners) > 1 else None)
            tasks.append(asyncio.create_task(deadlines.run(follower), name=f"scheduler-{partition}"))
            if seal is not None:
                source = archive.archive if archive is not None else None
                sealing = seal_loop(runner, seal, namespace, partition if len(runners) > 1 else None, source)
                tasks.append(asyncio.create_task(sealing, name=f"sealer-{partition}"))
            if archive is not None:
                archived = archive_loop(runner, archive, sealed=seal is not None)
                tasks.append(asyncio.create_task(archived, name=f"archiver-{partition}"))
        await asyncio.gather(*tasks)
    finally:
        await cancel_and_wait(tasks)
        if own_watch:
            await follower.close()


async def _partitions(
    ledger: AsyncLedger | OpeningLedger, state: SchedulerState
) -> AsyncLedger | AsyncPartitioned:
    """The runner, or the router over the partitions' runners, once the ledger opens (tried again
    while Redis is away, the reason kept in ``state`` for ``/ready``)."""
    if isinstance(ledger, AsyncLedger):
        return ledger
    pause, failing = RETRY_FIRST, None
    while True:
        try:
            router = await ledger.opened()
            state.problem = None
            return router
        except Unavailable as exc:
            if str(exc) != failing:  # a warning repeated while Redis stays away is written once
                log.warning("scheduler checks skipped: %s", exc)
            failing = state.problem = str(exc)
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX)


async def run_forever(config: Config, redis_url: str) -> Any:
    """``jobledger scheduler``: the checks against the configured ledger, until cancelled."""
    ledger = OpeningLedger(redis_url, config.redis.key_namespace, config.redis.partitions)
    store = open_store(config.blobs, config.embedded.data_dir, config.redis.key_namespace)
    retention = archive_settings(
        config, BlobArchive.over(store, config.embedded.data_dir, config.redis.key_namespace)
    )
    try:
        await run(ledger, intervals(config), retention, blobs=blob_sweep(config, store),
                  seal=seal_settings(config))  # fmt: skip
    finally:
        await store.close()
        await ledger.aclose()


def blob_sweep(config: Config, store: BlobStore) -> tuple[BlobStore, SweepSettings] | None:
    """What :func:`run` takes as ``blobs``: the store and the configured sweep, None when off."""
    settings = sweep_settings(config.blobs)
    return None if settings is None else (store, settings)
