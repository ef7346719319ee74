"""A ledger split into partitions on a real Valkey Cluster of three nodes: by default a ledger made on
a Cluster through the router is split into 16, which lie on every node in near-equal numbers; each
command runs on its partition's node, reads spanning queues gather every node's answer, a batch over
jobs on several nodes is split and answered in order, a watch follows each node it needs, an @event
launcher fires on events of a queue on another node, and each partition replays to exactly its
projections on its own node."""

from __future__ import annotations

import time
from collections import Counter

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import Partitioned, open_ledger
from jobledger.ledger.partitions import CLUSTER_PARTITIONS
from jobledger.ledger.placements import pin
from jobledger.ledger.redis_clients import sync_client
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.projections import readers
from jobledger.replay.placement import misplaced
from jobledger.replay.verify import verify
from tests.ledger.test_partitions import watch_wakes_each_partition
from tests.scheduler.launcher_support import complete_job, data_of, launched, new_launcher
from tests.scheduler.test_split_launchers import IDLE, wait_for
from tests.support.cluster_redis import LocalCluster
from tests.support.deadlines import scheduler_running
from tests.support.ledger import put_queue

QUEUES = [f"queue-{n}" for n in range(30)]


def close(router: Partitioned) -> None:
    for runner in router.runners:
        runner.client.close()


def nodes_of(cluster: LocalCluster, router: Partitioned) -> list[int]:
    """For each partition, the index of the node that serves it."""
    prefixes = [Keys(ns).ledger_prefix for ns in router.partitioning.namespaces]
    return [cluster.nodes.index(cluster.node_of(prefix)) for prefix in prefixes]


def test_a_ledger_on_a_cluster_is_split_into_partitions_on_every_node(cluster: LocalCluster) -> None:
    router = open_ledger(cluster.url, "split")
    try:
        assert router.partitioning.count == CLUSTER_PARTITIONS
        per_node = Counter(nodes_of(cluster, router))
        assert sorted(per_node.values()) == [5, 5, 6]  # the partitions lie evenly over the slots

        for name in QUEUES:
            router.run(commands.put_queue(name, QueueSettings(timeout=60_000)))
        ids = {name: router.run(commands.create_job(name, JobOptions(tags=["all"]))).id for name in QUEUES}
        # each queue's keys on its partition's node, and nowhere else
        where = nodes_of(cluster, router)
        for name, job_id in ids.items():
            partition = router.partitioning.of_queue(name)
            assert job_id % CLUSTER_PARTITIONS == partition
            owner = cluster.nodes[where[partition]].client()
            try:
                assert owner.exists(Keys(router.partitioning.namespaces[partition]).job(job_id)) == 1
            finally:
                owner.close()
        queues_per_node = Counter(where[router.partitioning.of_queue(name)] for name in QUEUES)
        assert sorted(queues_per_node.values()) == [10, 10, 10]  # placed where the fewest were

        assert router.read(readers.tagged("all")) == sorted(ids.values())
        assert router.read(readers.queue_names()) == sorted(QUEUES)
        assert router.read(readers.info())["statistics"]["total_jobs_created"] == len(QUEUES)

        started = [router.run(commands.fetch_jobs(name))[0] for name in QUEUES]
        done = [(job.id, JobUpdate(status="completed", attempt=job.attempt)) for job in started]
        assert router.run(commands.update_jobs(done)) == [1] * len(QUEUES)
        assert {router.read(readers.job_status(i)) for i in ids.values()} == {"completed"}

        for partition, namespace in enumerate(router.partitioning.namespaces):
            client = router.runners[partition].client  # routed to the partition's node
            assert misplaced(client, namespace) == []
            assert verify(client, namespace).ok
    finally:
        close(router)


def test_the_stored_count_holds_for_a_second_process_on_another_node(cluster: LocalCluster) -> None:
    first = open_ledger(cluster.url, "counted", 5)
    other_url = f"redis://127.0.0.1:{cluster.nodes[2].port}"
    second = open_ledger(other_url, "counted")  # no count asked: the stored one, from any node
    try:
        assert second.partitioning == first.partitioning
        first.run(commands.put_queue("q", QueueSettings()))
        made = first.run(commands.create_job("q", JobOptions())).id
        assert second.read(readers.job_status(made)) == "queued"
    finally:
        close(first)
        close(second)


def test_a_watch_follows_the_node_of_each_queue_it_waits_on(cluster: LocalCluster) -> None:
    assert watch_wakes_each_partition(cluster.url, "watched", 6, QUEUES) == [True] * 6


def test_a_single_slot_ledger_is_unchanged_on_a_cluster(cluster: LocalCluster) -> None:
    """A namespace that already holds a ledger (made before partitions) stays one partition."""
    client = sync_client(cluster.url, "single")
    try:
        client.xadd(Keys("single").events, {"type": "noop"})
        router = open_ledger(cluster.url, "single")
        assert router.partitioning.count == 1
        close(router)
    finally:
        client.close()


def test_an_event_launcher_fires_on_events_of_a_queue_on_another_node(cluster: LocalCluster) -> None:
    router = open_ledger(cluster.url, "chained")
    try:
        where, hashed = nodes_of(cluster, router), router.partitioning.hashed
        node = {name: where[hashed(name)] for name in QUEUES}
        source = QUEUES[0]
        target = next(name for name in QUEUES if node[name] != node[source])
        for name in (source, target):  # placed on two nodes
            pin(router.runners[0].client, router.partitioning, name, hashed(name))
        ra, rb = router.for_queue(source), router.for_queue(target)
        put_queue(ra, source)
        put_queue(rb, target)
        filter_ = {"type": "job_completed", "queue": source}
        chained = new_launcher(rb, "@event", filter_, queue=target)
        with scheduler_running(cluster.url, "chained", every=IDLE, partitions=CLUSTER_PARTITIONS):
            time.sleep(0.5)  # the loop of the launcher's partition follows the source's partition
            complete_job(ra, source)
            assert wait_for(lambda: launched(rb, chained), 10.0)
        complete_job(ra, source)  # while no scheduler runs
        with scheduler_running(cluster.url, "chained", every=IDLE, partitions=CLUSTER_PARTITIONS):
            assert wait_for(lambda: len(launched(rb, chained)) == 2, 10.0)
            time.sleep(0.3)
        assert len(launched(rb, chained)) == 2  # once each, the restarted scheduler too
        sources = [d["source"] for d in data_of(rb, "launcher_fired")]
        assert sources == [router.partitioning.of_queue(source)] * 2
        for partition, namespace in enumerate(router.partitioning.namespaces):
            client = router.runners[partition].client
            assert misplaced(client, namespace) == []
            assert verify(client, namespace).ok
    finally:
        close(router)
