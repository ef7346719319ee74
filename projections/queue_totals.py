"""Each queue's lifetime totals: how many of its jobs were created, started, completed, failed, timed
out, cancelled, expired and handed back, and the histograms of how long its jobs waited to start and
ran.  The appliers keep them in the hash ``queue:{q}:totals`` (``count_outcome.lua``,
``observe_duration.lua``) from the events alone, so they survive expiry, restarts and replay, and count
what every server and worker did.  Read by ``/metrics`` and by whatever shows a queue's totals."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import spread
from jobledger.ledger.reads import Read
from jobledger.projections.views import decode_hash

#: What the totals count, each a field of the hash.
OUTCOMES = ("created", "started", "completed", "failed", "timed_out", "cancelled", "expired", "returned")
#: The histograms kept beside them: wait (joined the queue -> started) and run (started -> stopped).
HISTOGRAMS = ("wait", "run")


def _declared_buckets() -> tuple[int, ...]:
    """The bucket bounds (ms) the appliers count in, from the one file that declares them."""
    text = (Path(__file__).parent / "lua" / "lib" / "duration_buckets.lua").read_text()
    found = re.search(r"^local DURATION_BUCKETS = \{([^}]*)\}", text, re.MULTILINE)
    if found is None:
        raise RuntimeError("duration_buckets.lua declares no DURATION_BUCKETS")
    return tuple(int(bound) for bound in found.group(1).split(","))


#: The upper bounds (ms) of the histograms' buckets, smallest first; +Inf follows the last.
DURATION_BUCKETS_MS = _declared_buckets()


@dataclass(frozen=True)
class Histogram:
    """Durations counted in each bucket (its own only, +Inf's last) and their sum, in ms."""

    counts: tuple[int, ...] = (0,) * (len(DURATION_BUCKETS_MS) + 1)
    sum_ms: int = 0

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound in seconds, durations up to it), as Prometheus's buckets: +Inf last."""
        bounds = [ms / 1000 for ms in DURATION_BUCKETS_MS] + [math.inf]
        running, out = 0, []
        for bound, n in zip(bounds, self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out

    def __add__(self, other: Histogram) -> Histogram:
        counts = tuple(a + b for a, b in zip(self.counts, other.counts, strict=True))
        return Histogram(counts, self.sum_ms + other.sum_ms)


@dataclass(frozen=True)
class QueueTotals:
    """One queue's lifetime counts (every name of :data:`OUTCOMES`) and its two histograms."""

    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    wait: Histogram = Histogram()
    run: Histogram = Histogram()

    def __add__(self, other: QueueTotals) -> QueueTotals:
        outcomes = {name: self.outcomes[name] + other.outcomes[name] for name in OUTCOMES}
        return QueueTotals(outcomes, self.wait + other.wait, self.run + other.run)


def _histogram(held: dict[str, str], name: str) -> Histogram:
    fields = [f"{name}:{bound}" for bound in DURATION_BUCKETS_MS] + [f"{name}:inf"]
    return Histogram(tuple(int(held.get(f, 0)) for f in fields), int(held.get(f"{name}:sum", 0)))


def parse_totals(held: dict[str, str]) -> QueueTotals:
    """The totals hash (decoded) as :class:`QueueTotals`; absent fields are zeros."""
    outcomes = {name: int(held.get(name, 0)) for name in OUTCOMES}
    return QueueTotals(outcomes, _histogram(held, "wait"), _histogram(held, "run"))


def _added(parts: list[dict[str, QueueTotals]]) -> dict[str, QueueTotals]:
    """Every partition's answer as one: a queue's totals are in its own partition, zeros elsewhere."""
    total = parts[0]
    for part in parts[1:]:
        total = {name: totals + part[name] for name, totals in total.items()}
    return total


def queue_totals(names: list[str]) -> Read[dict[str, QueueTotals]]:
    """The named queues' totals, in one round trip (each partition's at once)."""

    def commands(k: Keys) -> list[tuple[Any, ...]]:
        return [("HGETALL", k.build("queue_totals", name=name)) for name in names]

    def parse(r: list[Any]) -> dict[str, QueueTotals]:
        return {name: parse_totals(decode_hash(held)) for name, held in zip(names, r, strict=True)}

    return Read(commands, parse, spread(_added))
