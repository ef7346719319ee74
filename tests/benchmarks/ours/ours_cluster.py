"""Ours on a Cluster: a ledger split over three Valkey nodes against the same work on one node
(:func:`tests.benchmarks.cluster.measure`: the Cluster and the single node are its own, fresh, with
nothing kept on disk).  ``QUEUES`` queues, jobs created one by one round the queues, then each
fetched and completed one at a time.  Figures: the server CPU per job on each and their ratio, and
how evenly the queues' commands fall on the three nodes (the largest distance of a node's share
from the mean)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tests.benchmarks.cluster import measure as measured

from . import figures as F
from .figures import Figure, Results, Settings
from .server import Servers

#: The queues the work goes round: few enough that where each lives decides the spread.
QUEUES = 30
#: Jobs in a full run (the work is one command at a time, so a few thousand say it).
JOBS = 10_000


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    jobs = min(settings.jobs, JOBS)
    log(f"cluster: {jobs} jobs over {QUEUES} queues, one node then a Cluster of three")
    with tempfile.TemporaryDirectory(prefix="jobledger-bench-cluster-") as tmp:
        got = measured(jobs, QUEUES, Path(tmp))
    note = f"{jobs} jobs round {QUEUES} queues, one at a time; 16 partitions on the Cluster"
    calls = got["calls_per_node"]

    def number(key: str) -> float | None:
        value = got[key]
        return float(value) if isinstance(value, int | float) else None

    return {
        F.CLUSTER_CPU_SINGLE: Figure(number("single_cpu_us_per_job"), "us", note + "; one node"),
        F.CLUSTER_CPU: Figure(number("cluster_cpu_us_per_job"), "us", note + "; summed over the nodes"),
        F.CLUSTER_CPU_RATIO: Figure(number("cpu_ratio"), "x", "Cluster / one node"),
        F.CLUSTER_SPREAD: Figure(number("largest_distance_from_mean"), "", f"commands per node {calls}"),
    }
