"""The one clock.  Every command takes its ``now`` from here and records it in its event.

Nothing else in jobledger reads the time for ledger purposes, so freezegun, which patches
:func:`time.time`, controls every timestamp in tests.  One measurement is not a timestamp: how long
a command waited inside Redis before it ran, the server's ``TIME`` less :func:`wall_ms` as the
command was sent.  A fetch that waited more than a moment starts its jobs that much after its
``now`` (``ledger/lua/lib/start_time.lua``) and records that time in the event, so replay reads it
from there.  An injected clock, however far from the real time, still stamps every event.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    """Milliseconds since the epoch, UTC."""
    return int(time.time() * 1000)


def wall_ms() -> int:
    """The machine's real time in milliseconds since the epoch, whatever clock the ledger is given
    (freezegun leaves ``clock_gettime`` alone): sent with every command, only to measure how long it
    waited in Redis."""
    return time.clock_gettime_ns(time.CLOCK_REALTIME) // 1_000_000
