"""Redis work written once, for a sync client and an async one alike.

The work is a generator that yields what a client call gave -- ``client.get(key)``: the reply itself
from a ``redis.Redis``, an awaitable of it from a ``redis.asyncio.Redis`` -- and is sent the reply.
:func:`done` runs it on a sync client, where each reply is already there; :func:`awaited` on an async
one, awaiting each and throwing what failed back into the work where it yielded, so its ``try`` and
``finally`` act as they do on a sync client.  What the work yields as :class:`AtOnce` is several calls'
replies-to-be: on an async client they are awaited together, on a sync one they were made in turn.
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


def done(work: Work[T], mapped: Mapping = _itself) -> T:
    """The result of ``work`` on a sync client; an exception that ends it raised as ``mapped`` makes it."""
    try:
        reply = next(work)
        while True:
            reply = work.send(reply)  # the sync client replied when the work asked
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    except Exception as exc:
        if (instead := mapped(exc)) is exc:
            raise
        raise instead from exc


async def awaited(work: Work[T], mapped: Mapping = _itself) -> T:
    """The result of ``work`` on an async client; an exception that ends it raised as ``mapped``
    makes it."""
    try:
        pending = next(work)
        while True:
            try:
                reply = await (asyncio.gather(*pending) if isinstance(pending, AtOnce) else pending)
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
