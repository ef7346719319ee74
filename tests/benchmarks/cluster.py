"""``python -m tests.benchmarks.cluster [--jobs N] [--queues Q]``: a ledger split over a Valkey Cluster
against the same work on one node.

Starts one bundled ``valkey-server`` and a Cluster of three (cluster mode on, slots in thirds), each
with nothing kept on disk, and runs the same work on each through the ledger's router
(:mod:`jobledger.ledger.partitioned`): ``Q`` queues, ``N`` jobs created one by one round the queues,
then each fetched and completed one at a time (the commands of a worker at concurrency 1).  Reports:

- server CPU per job (``used_cpu_user + used_cpu_sys`` of ``INFO cpu``, summed over the nodes), on the
  Cluster (16 partitions) and on one node (one partition), and their ratio;
- how the commands spread over the Cluster's nodes (``cmdstat_fcall`` calls per node of ``INFO
  commandstats``): each node's share and its distance from the mean, against the ±20% bar.

Not a test: figures depend on the machine; the ratio and the spread are what to compare.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import redis

from jobledger.ledger import commands
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from tests.support.cluster_redis import ClusterNode, LocalCluster
from tests.support.private_redis import PrivateServer


class QuietNode(ClusterNode):
    """A Cluster node that keeps nothing on disk, as the single node of the comparison."""

    SETTINGS: tuple[str, ...] = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "2000", "--appendonly", "no", "--save", "")  # fmt: skip


def _cpu_and_calls(urls: Sequence[str]) -> list[tuple[float, int]]:
    """Per node: seconds of CPU used so far, and FCALL (command) calls served."""
    out = []
    for url in urls:
        client = redis.Redis.from_url(url)
        try:
            cpu = client.info("cpu")
            stats = client.info("commandstats")
        finally:
            client.close()
        calls = sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("fcall", "evalsha"))
        out.append((float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]), calls))
    return out


def run_work(url: str, namespace: str, partitions: int, jobs: int, queues: int) -> float:
    """The work (see the module) on ``url``; its wall seconds."""
    ledger = open_ledger(url, namespace, partitions)
    names = [f"queue-{n}" for n in range(queues)]
    try:
        for name in names:
            ledger.run(commands.put_queue(name, QueueSettings(timeout=60_000)))
        started = time.perf_counter()
        for n in range(jobs):
            ledger.run(commands.create_job(names[n % queues], JobOptions()))
        for n in range(jobs):
            (job,) = ledger.run(commands.fetch_jobs(names[n % queues]))
            ledger.run(commands.update_job(job.id, JobUpdate(status="completed", attempt=job.attempt)))
        return time.perf_counter() - started
    finally:
        for runner in ledger.runners:
            runner.client.close()


def measure(jobs: int, queues: int, workdir: Path) -> dict[str, object]:
    single = PrivateServer(workdir / "single")
    cluster = LocalCluster(workdir / "cluster")
    cluster.nodes = [QuietNode(workdir / "cluster" / f"node{i}") for i in range(3)]
    cluster.url = cluster.nodes[0].url
    single.start()
    cluster.start()
    try:
        before = _cpu_and_calls([single.url])
        single_s = run_work(single.url, "bench", 1, jobs, queues)
        after = _cpu_and_calls([single.url])
        single_cpu = after[0][0] - before[0][0]

        urls = [node.url for node in cluster.nodes]
        before = _cpu_and_calls(urls)
        cluster_s = run_work(cluster.url, "bench", 16, jobs, queues)
        after = _cpu_and_calls(urls)
        cluster_cpu = sum(a[0] - b[0] for a, b in zip(after, before, strict=True))
        calls = [a[1] - b[1] for a, b in zip(after, before, strict=True)]
    finally:
        single.kill()
        cluster.kill()
    mean = sum(calls) / len(calls)
    return {
        "jobs": jobs,
        "queues": queues,
        "single_cpu_us_per_job": single_cpu / jobs * 1e6,
        "cluster_cpu_us_per_job": cluster_cpu / jobs * 1e6,
        "cpu_ratio": cluster_cpu / single_cpu if single_cpu else None,
        "single_jobs_per_s": jobs / single_s,
        "cluster_jobs_per_s": jobs / cluster_s,
        "calls_per_node": calls,
        "largest_distance_from_mean": max(abs(c - mean) / mean for c in calls) if mean else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--queues", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        got = measure(args.jobs, args.queues, Path(tmp))
    distance = got["largest_distance_from_mean"]
    met = isinstance(distance, float) and distance <= 0.2
    print(f"{got['jobs']:,} jobs over {got['queues']} queues, created one by one, then fetched and completed")
    print(f"server CPU per job, one node (1 partition):      {got['single_cpu_us_per_job']:8.1f} µs")
    print(f"server CPU per job, 3-node Cluster (16 partitions): {got['cluster_cpu_us_per_job']:8.1f} µs"
          f"  ({got['cpu_ratio']:.2f}x one node)")  # fmt: skip
    print(f"jobs/s (one client, one at a time): one node {got['single_jobs_per_s']:,.0f}, "
          f"Cluster {got['cluster_jobs_per_s']:,.0f}")  # fmt: skip
    print(f"FCALL calls per node: {got['calls_per_node']}; largest distance from the mean "
          f"{distance:.1%} ({'MET' if met else 'NOT MET'}: within ±20%)")  # fmt: skip


if __name__ == "__main__":
    main()
