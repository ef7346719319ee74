"""A read as plain data: the Redis commands to pipeline, and how to parse their replies.

One description serves the sync and the async runner alike.  ``parse`` may return another Read when
a second round trip is needed (e.g. sizes after listing the queues).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import UNROUTED, Route

T = TypeVar("T")


@dataclass(frozen=True)
class Read(Generic[T]):
    commands: Callable[[Keys], list[tuple[Any, ...]]]
    parse: Callable[[list[Any]], T | Read[T]]
    #: the partition(s) it reads (a Read its parse returns reads the same partition)
    route: Route = UNROUTED
