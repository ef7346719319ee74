"""A server's ledger opened on first use and closed at shutdown leaves no connection open, whenever
the opening is cancelled or the close comes."""

from __future__ import annotations

import asyncio
import gc
import time
import warnings
from collections.abc import Callable, Coroutine
from typing import Any
from uuid import uuid4

import pytest

from jobledger.ledger.errors import Unavailable
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.tasks import cancel_and_wait


def _unclosed(run: Callable[[], Coroutine[Any, Any, None]]) -> list[str]:
    """What the ResourceWarnings of ``run()`` (a fresh event loop, closed after) and the collection
    after it say was left open."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(run())
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def _opening_time(redis_url: str) -> float:
    async def opening() -> float:
        ledger = OpeningLedger(redis_url, f"open-{uuid4().hex}")
        started = time.perf_counter()
        await ledger.opened()
        took = time.perf_counter() - started
        await ledger.aclose()
        return took

    return max(asyncio.run(opening()) for _ in range(5))


def test_an_opening_cancelled_at_any_moment_leaves_no_connection_open(redis_url: str) -> None:
    # The opening asks the server whether it is a Cluster and reads the stored partition count on a
    # client of its own, then makes the partitions' clients: a cancellation can land in any of those
    # awaits, and in the closes that follow it.  Cancel after every delay from nothing to the whole
    # opening's time.
    span = _opening_time(redis_url) * 1.5
    leaks: dict[float, list[str]] = {}

    for step in range(300):
        delay = span * step / 300

        async def cancelled_opening(delay: float = delay) -> None:
            ledger = OpeningLedger(redis_url, f"open-{uuid4().hex}")
            opening = asyncio.ensure_future(ledger.opened())
            await asyncio.sleep(delay)
            await cancel_and_wait([opening])
            await ledger.aclose()

        if found := _unclosed(cancelled_opening):
            leaks[delay] = found
    assert leaks == {}


def test_a_close_during_an_opening_closes_what_the_opening_opened(redis_url: str) -> None:
    outcomes: list[str] = []

    async def closed_while_opening() -> None:
        ledger = OpeningLedger(redis_url, f"open-{uuid4().hex}")
        opening = asyncio.ensure_future(ledger.opened())
        await asyncio.sleep(0)  # the opening has begun
        await ledger.aclose()
        try:
            await opening
            outcomes.append("opened before the close")
        except Unavailable:
            outcomes.append("refused")
        with pytest.raises(Unavailable, match="closed"):
            await ledger.opened()
        with pytest.raises(Unavailable, match="closed"):
            await ledger.as_actor("someone").opened()

    for _ in range(20):
        assert _unclosed(closed_while_opening) == []
    assert outcomes == ["opened before the close"] * 20  # the close waited for the opening


def test_a_ledger_closed_before_it_opened_opens_nothing(redis_url: str) -> None:
    async def closed_first() -> None:
        ledger = OpeningLedger(redis_url, f"open-{uuid4().hex}")
        await ledger.aclose()
        with pytest.raises(Unavailable, match="closed"):
            await ledger.opened()
        assert ledger.router is None

    assert _unclosed(closed_first) == []
