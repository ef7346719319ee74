"""Compare the projections of two namespaces key by key.

Every projection key of each namespace (all but the stream and the archive's bookkeeping) is read
whole, by type (string, hash, list in order, set, sorted set with scores in order); any key missing
on one side, of another type, or with other content is a :class:`Difference`.  Used by the tests
(replay equality); ``replay verify`` (:mod:`jobledger.replay.verify`) compares while the ledger takes writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from jobledger.ledger.runner import live_keys

_READ = {
    "string": lambda c, k: c.get(k),
    "hash": lambda c, k: dict(sorted(c.hgetall(k).items())),
    "list": lambda c, k: c.lrange(k, 0, -1),
    "set": lambda c, k: sorted(c.smembers(k)),
    "zset": lambda c, k: c.zrange(k, 0, -1, withscores=True),
}


@dataclass(frozen=True)
class Difference:
    key: str  # without the namespace prefix
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return f"{self.key}: expected {self.expected!r}, found {self.actual!r}"


def snapshot(client: redis.Redis, namespace: str) -> dict[str, tuple[str, Any]]:
    """Every projection key of the namespace's live generation (its prefix removed) -> (type,
    content)."""
    keys = live_keys(client, namespace)
    out: dict[str, tuple[str, Any]] = {}
    for raw in client.scan_iter(match=keys.pattern(), count=1000):
        key = raw.decode() if isinstance(raw, bytes) else raw
        if not keys.owns(key[len(keys.prefix) :]):
            continue
        kind = client.type(key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "none":
            continue
        out[key[len(keys.prefix) :]] = (kind, _READ[kind](client, key))
    return out


def compare(client: redis.Redis, expected_ns: str, actual_ns: str) -> list[Difference]:
    """Differences between two namespaces' projections, sorted by key; empty when equal."""
    expected, actual = snapshot(client, expected_ns), snapshot(client, actual_ns)
    return [
        Difference(key, expected.get(key), actual.get(key))
        for key in sorted(expected.keys() | actual.keys())
        if expected.get(key) != actual.get(key)
    ]
