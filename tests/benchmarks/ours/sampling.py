"""What the server spent: CPU, commands and memory, from INFO, as differences between two samples.

Server CPU is ``used_cpu_sys + used_cpu_user`` (the whole server process, every thread); commands
are INFO commandstats ``calls``, which count the commands a script runs as well as the EVALSHA that
ran it (so "commands per job" is the work the server did, not the round trips a client made).
``info`` itself and connection set-up are left out, and so are the probes the harness sends while it
waits for work to finish (it counts them and takes them off: :meth:`Usage.without`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis

#: Commands that are not a job's work: INFO (the samples) and connection set-up.
HARNESS_COMMANDS = frozenset(
    {"info", "ping", "hello", "client|setinfo", "client|setname", "client|getname", "select", "client|id"}
)
SCRIPT_COMMANDS = ("evalsha", "eval", "fcall", "evalsha_ro", "eval_ro", "fcall_ro")


@dataclass(frozen=True)
class Sample:
    """One reading of INFO."""

    cpu: float
    calls: dict[str, int]
    usec: dict[str, int]
    memory: int


@dataclass(frozen=True)
class Usage:
    """What the server spent between two samples."""

    cpu: float
    calls: dict[str, int] = field(default_factory=dict)
    usec: dict[str, int] = field(default_factory=dict)
    memory: int = 0

    def __add__(self, other: Usage) -> Usage:
        keys = set(self.calls) | set(other.calls)
        return Usage(
            self.cpu + other.cpu,
            {k: self.calls.get(k, 0) + other.calls.get(k, 0) for k in keys},
            {k: self.usec.get(k, 0) + other.usec.get(k, 0) for k in keys},
            self.memory + other.memory,
        )

    def without(self, command: str, count: int) -> Usage:
        """The same usage less ``count`` calls of ``command`` that the harness made itself."""
        calls = dict(self.calls)
        if command in calls:
            calls[command] = max(0, calls[command] - count)
        return Usage(self.cpu, calls, self.usec, self.memory)

    def cpu_us_per(self, jobs: int) -> float:
        return self.cpu * 1e6 / jobs

    def calls_per(self, jobs: int, counted: frozenset[str] = HARNESS_COMMANDS) -> float:
        return sum(n for name, n in self.calls.items() if name not in counted) / jobs

    def breakdown(self, jobs: int, top: int = 12) -> dict[str, dict[str, float]]:
        """The busiest commands: calls and server µs per job, most time first."""
        names = [n for n in self.calls if n not in HARNESS_COMMANDS]
        names.sort(key=lambda n: -self.usec.get(n, 0))
        return {
            n: {"calls": round(self.calls[n] / jobs, 3), "usec": round(self.usec.get(n, 0) / jobs, 3)}
            for n in names[:top]
        }


def sample(client: redis.Redis) -> Sample:
    """Read INFO cpu, commandstats and memory in one round trip."""
    info: dict[str, Any] = client.info("everything")
    calls: dict[str, int] = {}
    usec: dict[str, int] = {}
    for key, value in info.items():
        if key.startswith("cmdstat_") and isinstance(value, dict):
            calls[key[8:]] = int(value["calls"])
            usec[key[8:]] = int(value["usec"])
    cpu = float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    return Sample(cpu, calls, usec, int(info["used_memory"]))


def between(before: Sample, after: Sample) -> Usage:
    names = set(after.calls)
    return Usage(
        after.cpu - before.cpu,
        {
            n: after.calls[n] - before.calls.get(n, 0)
            for n in names
            if after.calls[n] != before.calls.get(n, 0)
        },
        {n: after.usec[n] - before.usec.get(n, 0) for n in names if after.calls[n] != before.calls.get(n, 0)},
        after.memory - before.memory,
    )


class Meter:
    """``with Meter(client) as m: ...`` then ``m.usage``: what the server spent inside the block."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.usage = Usage(0.0)
        self._before: Sample | None = None

    def __enter__(self) -> Meter:
        self._before = sample(self.client)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._before is not None
        self.usage = between(self._before, sample(self.client))


def script_calls(usage: Usage, jobs: int) -> float:
    """Round trips that ran a script, per job."""
    return sum(usage.calls.get(n, 0) for n in SCRIPT_COMMANDS) / jobs
