"""Redis work written once, for a sync client and an async one alike.

The work is a generator that yields what a client call gave -- ``client.get(key)``: the reply itself
from a ``redis.Redis``, an awaitable of it from a ``redis.asyncio.Redis`` -- and is sent the reply.
:func:`done` runs it on a sync client, where each reply is already there; :func:`awaited` on an async
one, awaiting each and throwing what failed back into the work where it yielded, so its ``try`` and
``finally`` act as they do on a sync client.  What the work yields as :class:`AtOnce` is several calls'
replies-to-be: on an async client they are awaited together, on a sync one they were made in turn.
What it yields as :class:`Finishing` (a client's close) is awaited to its end even when the task
running the work is cancelled meanwhile: the cancellation is thrown into the work once it has ended,
so a cancelled work never leaves a connection open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, TypeVar

T = TypeVar("T")

#: Work for either kind of client: yields replies-to-be, is sent the replies, returns its result.
Work = Generator[Any, Any, T]


#: What an exception that ends the work is raised as (itself, when nothing else).
Mapping = Callable[[Exception], Exception]


def _itself(exc: Exception) -> Exception:
    return exc


class AtOnce(list[Any]):
    """Several calls' replies-to-be, sent back as the list of their replies."""


class Finishing:
    """A call's reply-to-be that is awaited to its end even when the task awaiting it is cancelled
    (the cancellation is raised once it has ended): a client's close."""

    def __init__(self, pending: Any) -> None:
        self.pending = pending


async def _finished(pending: Any) -> Any:
    """``pending`` awaited to its end; a cancellation that came meanwhile raised after it."""
    task = asyncio.ensure_future(pending)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return task.result()


def done(work: Work[T], mapped: Mapping = _itself) -> T:
    """The result of ``work`` on a sync client; an exception that ends it raised as ``mapped`` makes it."""
    try:
        reply = next(work)
        while True:
            reply = work.send(reply.pending if isinstance(reply, Finishing) else reply)  # replied when asked
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    except Exception as exc:
        if (instead := mapped(exc)) is exc:
            raise
        raise instead from exc


def _awaitable(pending: Any) -> Any:
    if isinstance(pending, AtOnce):
        return asyncio.gather(*pending)
    if isinstance(pending, Finishing):
        return _finished(pending.pending)
    return pending


async def awaited(work: Work[T], mapped: Mapping = _itself) -> T:
    """The result of ``work`` on an async client; an exception that ends it raised as ``mapped``
    makes it."""
    try:
        pending = next(work)
        while True:
            try:
                reply = await _awaitable(pending)
            except BaseException as exc:  # noqa: BLE001 - thrown into the work, which raises it again or not
                pending = work.throw(exc)
            else:
                pending = work.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    except Exception as exc:
        if (instead := mapped(exc)) is exc:
            raise
        raise instead from exc
    finally:
        work.close()
