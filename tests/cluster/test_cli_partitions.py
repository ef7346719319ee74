"""The command line on a ledger split over the three nodes of a real Valkey Cluster (16 partitions, the
default there): verify, rebuild into a split view, export and import each reach every partition on
its own node."""

from __future__ import annotations

from pathlib import Path

from jobledger.ledger import commands
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.partitions import CLUSTER_PARTITIONS
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.projections import readers
from tests.cli.test_cli_partitions import close, run
from tests.support.cluster_redis import LocalCluster

QUEUES = [f"queue-{n}" for n in range(30)]


def test_verify_rebuild_export_and_import_reach_every_node(cluster: LocalCluster, tmp_path: Path) -> None:
    router = open_ledger(cluster.url, "cli")
    try:
        assert router.partitioning.count == CLUSTER_PARTITIONS
        for name in QUEUES:
            router.run(commands.put_queue(name, QueueSettings()))
            router.run(commands.create_job(name, JobOptions(tags=["all"])))
            router.run(commands.create_job(name, JobOptions(tags=["all"])))
            (job,) = router.run(commands.fetch_jobs(name))
            router.run(commands.update_job(job.id, JobUpdate(status="completed", attempt=job.attempt)))
        tagged = router.read(readers.tagged("all"))

        code, out = run(tmp_path, cluster.url, "cli", "replay", "verify")
        assert code == 0, out
        assert f"verified ledger 'cli', {CLUSTER_PARTITIONS} partitions:" in out, out

        code, out = run(tmp_path, cluster.url, "cli", "replay", "rebuild", "--into", "cli-view")
        assert code == 0, out
        path = tmp_path / "cli.jsonl"
        code, out = run(tmp_path, cluster.url, "cli", "events", "export", "--to", str(path))
        assert code == 0, out
        code, out = run(tmp_path, cluster.url, "cli-copy", "events", "import", str(path))
        assert code == 0, out
        code, out = run(tmp_path, cluster.url, "cli-copy", "replay", "verify")
        assert code == 0, out
        for made in ("cli-view", "cli-copy"):
            other = open_ledger(cluster.url, made)
            try:
                assert other.partitioning.count == CLUSTER_PARTITIONS
                assert other.read(readers.tagged("all")) == tagged
                assert other.read(readers.status_counts(QUEUES))[QUEUES[7]]["completed"] == 1
            finally:
                close(other)
    finally:
        close(router)
