"""The last hour's throughput of each queue, from its minute buckets (``queue:{q}:throughput``, kept
by the appliers of the events that end a run), with each queue's settings: what the dashboard's
queues page shows beside the counts.  Sixty buckets a queue at most, whatever the ledger's size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobledger.ledger.keys import Keys
from jobledger.ledger.reads import Read
from jobledger.ledger.requests import QueueSettings
from jobledger.projections.views import decode_hash, queue_settings

MINUTE_MS = 60_000
HOUR_MINUTES = 60


@dataclass(frozen=True)
class Throughput:
    """Runs of the last hour that ended completed, and those that ended failed or timed out; and
    the same per minute, oldest first, the current minute last (what a chart of the hour draws)."""

    completed: int = 0
    failed: int = 0
    minutes: tuple[tuple[int, int], ...] = ((0, 0),) * HOUR_MINUTES

    @property
    def total(self) -> int:
        return self.completed + self.failed


def last_hour(buckets: dict[str, str], now_ms: int) -> Throughput:
    """Add up the buckets of the sixty minutes up to ``now_ms``; older ones are stale."""
    current = now_ms // MINUTE_MS
    minutes = [(0, 0)] * HOUR_MINUTES
    for value in buckets.values():
        minute, done, bad = (int(part) for part in value.split(":"))
        if current - HOUR_MINUTES < minute <= current:
            minutes[HOUR_MINUTES - 1 - (current - minute)] = (done, bad)
    return Throughput(sum(m[0] for m in minutes), sum(m[1] for m in minutes), tuple(minutes))


@dataclass(frozen=True)
class QueueDetail:
    settings: QueueSettings | None  # None: the queue was deleted (jobs of it remain)
    throughput: Throughput


def queue_details(names: list[str], now_ms: int) -> Read[dict[str, QueueDetail]]:
    """Each named queue's settings and last hour's throughput, in one round trip."""

    def commands(k: Keys) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for name in names:
            out += [("HGETALL", k.queue(name)), ("HGETALL", k.build("queue_throughput", name=name))]
        return out

    def parse(r: list[Any]) -> dict[str, QueueDetail]:
        details = {}
        for name, settings, buckets in zip(names, r[0::2], r[1::2], strict=True):
            held = decode_hash(settings)
            details[name] = QueueDetail(
                queue_settings(held) if held else None, last_hour(decode_hash(buckets), now_ms)
            )
        return details

    return Read(commands, parse)
