"""The scheduler: just another client of the ledger.

Its checks are ordinary commands (``check_releases`` of scheduled jobs, ``check_timeouts`` of
running jobs, ``check_queued`` against max_queued_time, ``check_retries``, ``check_expiry``); each
reads only the due part of a deadline set and re-checks the job inside its script, so any number of
schedulers can run at once and a job still times out, retries or expires once.  A check runs in
batches until less than a full batch was due.  Intervals come from the ``[server]`` config (releases
and queue-time checks run on the timeout check's interval).  The launcher checks
(:mod:`ledger.launchers`: @event launchers follow the ledger, then due launchers fire) run every
second, as cron expressions name seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ledger import commands, launchers
from ledger.commands import Call
from ledger.errors import Unavailable
from ledger.runner import AsyncLedger, Ledger, connect_async
from projections.readers import Read
from replay.archiver import ArchiveSettings, archive_loop, archive_settings

if TYPE_CHECKING:
    from api.config import Config

log = logging.getLogger("jobledger.scheduler")

BATCH = 500
Check = Callable[[int], Call[list[int]]]
CHECKS: dict[str, Check] = {
    "releases": commands.check_releases,
    "timeouts": commands.check_timeouts,
    "queued": commands.check_queued,
    "retries": commands.check_retries,
    "expiry": commands.check_expiry,
}
#: The deadline set each check reads its due work from.
DEADLINES: dict[str, str] = {
    "releases": "due_release",
    "timeouts": "due_run",
    "queued": "due_queued",
    "retries": "due_retry",
    "expiry": "due_expire",
}
#: How often the launcher checks run (ms).
LAUNCHER_INTERVAL = 1000


def anything_due(name: str, now: int) -> Read[bool]:
    """Whether the check ``name`` has work due by ``now``: one ZRANGE of its deadline set, LIMIT 1.
    A check runs its script only when this says so, so an idle check costs the server one O(log N)
    read instead of a script call (which builds its Lua functions each time, ~20-40 µs).  The
    script decides again on its own clock; work that falls due in between waits for the next round."""
    template = DEADLINES[name]
    return Read(
        lambda k: [("ZRANGE", k.build(template), "-inf", now, "BYSCORE", "LIMIT", 0, 1)],
        lambda r: bool(r[0]),
    )


def check(ledger: Ledger, name: str, batch: int = BATCH) -> list[int]:
    """One check, to the end of what is due now; the ids it handled."""
    done: list[int] = []
    if not ledger.read(anything_due(name, ledger.clock())):
        return done
    while True:
        ids = ledger.run(CHECKS[name](batch))
        done += ids
        if len(ids) < batch:
            return done


def tick(ledger: Ledger, batch: int = BATCH) -> dict[str, list[int]]:
    """Run every check once, to the end of what is due now; the ids each check handled."""
    out = {name: check(ledger, name, batch) for name in CHECKS}
    out["events"] = launchers.follow_event_launchers(ledger, batch=batch)
    out["launchers"] = launchers.fire_due_launchers(ledger, batch=batch)
    return out


async def run_check(ledger: AsyncLedger, name: str, batch: int = BATCH) -> int:
    """One check (see :func:`check`), to the end of what is due now; how many jobs it handled."""
    total = 0
    if not await ledger.read(anything_due(name, ledger.clock())):
        return total
    while True:
        ids = await ledger.run(CHECKS[name](batch))
        total += len(ids)
        if len(ids) < batch:
            return total


async def _loop(ledger: AsyncLedger, name: str, interval_ms: int) -> None:
    while True:
        try:
            handled = await run_check(ledger, name)
            if handled:
                log.info("%s check handled %d jobs", name, handled)
        except Unavailable as exc:
            log.warning("%s check skipped: %s", name, exc)
        await asyncio.sleep(max(interval_ms, 10) / 1000)


async def _launcher_loop(ledger: AsyncLedger, interval_ms: int) -> None:
    positions: dict[int, str] = {}  # how far the event check has read for each @event launcher
    while True:
        try:
            handled = await launchers.check_launchers(ledger, positions)
            if handled:
                log.info("launcher checks acted on %d launchers", handled)
        except Unavailable as exc:
            log.warning("launcher checks skipped: %s", exc)
        await asyncio.sleep(max(interval_ms, 10) / 1000)


def intervals(config: Config) -> dict[str, int]:
    s = config.server
    return {
        "releases": s.timeout_check_interval,
        "timeouts": s.timeout_check_interval,
        "queued": s.timeout_check_interval,
        "retries": s.retry_check_interval,
        "expiry": s.expiry_check_interval,
    }


async def run(ledger: AsyncLedger, every: dict[str, int], archive: ArchiveSettings | None = None) -> None:
    """Run the checks, each on its own interval (ms), and retention if configured, until cancelled."""
    loops = [_loop(ledger, name, every[name]) for name in CHECKS]
    loops.append(_launcher_loop(ledger, every.get("launchers", LAUNCHER_INTERVAL)))
    if archive is not None:
        loops.append(archive_loop(ledger, archive))
    await asyncio.gather(*loops)


async def run_forever(config: Config, redis_url: str) -> Any:
    """``jobledger scheduler``: the checks against the configured ledger, until cancelled."""
    ledger = connect_async(redis_url, config.redis.key_namespace)
    try:
        await run(ledger, intervals(config), archive_settings(config))
    finally:
        await ledger.client.aclose()
