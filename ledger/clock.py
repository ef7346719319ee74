"""The one clock.  Every command takes its ``now`` from here and records it in its event.

Nothing else in jobledger reads the time for ledger purposes (no script reads Redis ``TIME``), so
freezegun, which patches :func:`time.time`, controls every timestamp in tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    """Milliseconds since the epoch, UTC."""
    return int(time.time() * 1000)
