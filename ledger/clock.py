"""The one clock.  Every command takes its ``now`` from here and records it in its event.

Nothing else in jobledger reads the time for ledger purposes, so freezegun, which patches
:func:`time.time`, controls every timestamp in tests.  One exception, which only ever moves a time
later: a fetch that waited in a stalled Redis starts its jobs at the server's ``TIME`` when that is
well past its ``now`` (``ledger/lua/lib/start_time.lua``), and records that time in the event.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    """Milliseconds since the epoch, UTC."""
    return int(time.time() * 1000)
