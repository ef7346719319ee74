"""The event loop a worker runs on when it owns one (:meth:`Worker.run`, ``jobledger worker``).

uvloop's where it is installed (it is a dependency on the platforms it supports), else asyncio's own.
A worker's cost per job is mostly event-loop turns and the Redis client's awaits, which uvloop's
loop makes cheaper (by how much: docs/benchmarks.md).  A worker run with :meth:`Worker.run_async`
runs on whatever loop its caller runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What makes a worker's loop: uvloop's ``new_event_loop``, or None (asyncio's default)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop  # type: ignore[no-any-return]


def loop_name() -> str:
    """``"uvloop"`` or ``"asyncio"``: the loop :func:`run` runs on here."""
    return "asyncio" if loop_factory() is None else "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to its end on a new loop of :func:`loop_factory`'s, as :func:`asyncio.run` does."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
