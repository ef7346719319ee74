"""A command of the ledger as data: which script, its arguments, how to read its reply, and where
it runs.  The commands themselves are built by :mod:`jobledger.ledger.commands`; the runners only
need this record, so they load none of the request models the commands check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from jobledger.ledger.partitions import UNROUTED, Route

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One command: script name, its ARGV after ``now``, and the parser of its reply."""

    script: str
    args: tuple[str | int, ...]
    parse: Callable[[Any], T] = field(default=lambda reply: reply)
    #: the partition(s) it runs on (scheduler checks: none; they run on each partition in turn)
    route: Route = UNROUTED
