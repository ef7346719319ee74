"""jobledger on a real Valkey Cluster of three nodes (started on loopback by the fixture): pointed at
any node, a server, a worker's direct transport and the CLI reach the node that serves their
namespace's slot; namespaces spread over the nodes; a node killed and started again on its append-only
file loses no acknowledged job; two servers with their schedulers side by side append no event twice;
replay verify passes, its scratch namespace on the ledger's node."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from pathlib import Path

import httpx2
import pytest
import redis

from jobledger.client import Client
from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.partitions import CLUSTER_PARTITIONS
from jobledger.ledger.placements import pin
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import connect
from jobledger.ledger.slot_routing import in_slot_of, on_cluster, slot_of
from jobledger.replay.verify import scratch_name, verify
from jobledger.runtime.embedded import free_port
from jobledger.worker import Worker
from tests.cli.process_support import jobledger, serve_args, wait_for, wait_serving
from tests.support.cluster_redis import LocalCluster
from tests.support.ledger import assert_well_placed, events
from tests.support.live_server import live_server


def namespace_on(cluster: LocalCluster, index: int, stem: str) -> str:
    """A fresh namespace whose slot is served by node ``index`` (the URL names node 0)."""
    n = 0
    while True:
        name = f"{stem}-{n}"
        if cluster.node_of(Keys(name).ledger_prefix) is cluster.nodes[index]:
            return name
        n += 1


def keys_on(node_url: str, namespace: str) -> int:
    client = redis.Redis.from_url(node_url)
    try:
        return len(client.keys(Keys(namespace).pattern()))
    finally:
        client.close()


def test_a_server_pointed_at_any_node_serves_a_ledger_split_over_every_node(cluster: LocalCluster) -> None:
    namespace = namespace_on(cluster, 2, "far")
    queues = [f"work-{n}" for n in range(8)]
    with live_server(cluster.url, namespace) as url, Client(url) as api:
        for name in queues:
            api.put_queue(name, timeout="1m")
        ids = {name: [api.submit(name, input={"n": n}, tags=["batch"]) for n in range(3)] for name in queues}
        for name in queues:
            (job,) = api.fetch(name)
            assert job.id == ids[name][0]
            api.complete(job.id, output={"ok": True})
            assert api.get(job.id).status == "completed"
            assert [e.type for e in api.history(job.id)] == ["job_created", "job_started", "job_completed"]
            assert api.queue_size(name) == 2
        assert sorted(api.tagged("batch")) == sorted(i for made in ids.values() for i in made)
    ledger = open_ledger(cluster.url, namespace)
    try:
        assert ledger.partitioning.count == CLUSTER_PARTITIONS  # a Cluster's default
        assert on_cluster(ledger.home.client)
        assert all(partitions_on(node.url, namespace) > 0 for node in cluster.nodes)
        for runner in ledger.runners:
            assert_well_placed(runner)
            assert verify(runner.client, runner.keys.namespace).ok
    finally:
        for runner in ledger.runners:
            runner.client.close()


def partitions_on(node_url: str, namespace: str) -> int:
    """How many keys of the namespace's partitions the node holds."""
    client = redis.Redis.from_url(node_url)
    try:
        return len(client.keys(f"{{{namespace}-*"))
    finally:
        client.close()


def test_namespaces_spread_over_every_node(cluster: LocalCluster) -> None:
    names = [f"spread-{n}" for n in range(12)]
    for name in names:
        ledger = connect(cluster.url, name)
        ledger.run(commands.put_queue("q", QueueSettings()))
        ledger.run(commands.create_job("q", JobOptions()))
        ledger.client.close()
    per_node = [sum(keys_on(node.url, name) for name in names) for node in cluster.nodes]
    assert all(count > 0 for count in per_node), per_node


def test_a_node_killed_and_started_again_loses_no_acknowledged_job(cluster: LocalCluster) -> None:
    namespace = namespace_on(cluster, 1, "restart")
    node = cluster.nodes[1]
    router = open_ledger(cluster.url, namespace)
    try:  # a queue placed in a partition the node serves
        where = router.partitioning
        queue = next(
            name
            for name in (f"q{n}" for n in range(100))
            if cluster.node_of(Keys(where.namespaces[where.hashed(name)]).ledger_prefix) is node
        )
        pin(router.runners[0].client, where, queue, where.hashed(queue))
    finally:
        for runner in router.runners:
            runner.client.close()
    with live_server(cluster.url, namespace) as url, Client(url) as api:
        api.put_queue(queue)
        acknowledged = [api.submit(queue, input={"n": n}) for n in range(20)]
        node.kill()
        with pytest.raises(httpx2.HTTPError):
            httpx2.post(f"{url}/queue/{queue}/job", json={"input": 1}, timeout=10).raise_for_status()
        node.start()
        wait_for(cluster.ready, "the cluster to be whole again")
        wait_for(lambda: httpx2.get(f"{url}/ready", timeout=5).status_code == 200, "the server to be ready")
        acknowledged.append(api.submit(queue, input={"n": "after"}))
        for job_id in acknowledged:
            assert api.get(job_id).status == "queued"
        assert api.queue_size(queue) == len(acknowledged)


def test_verify_scratch_and_rebuild_targets_share_the_ledgers_slot() -> None:
    for namespace in ("jobledger", "a", "orders-eu"):
        assert slot_of(scratch_name(namespace)) == slot_of(namespace)
        assert slot_of(in_slot_of(f"{namespace}-rebuild-x", namespace)) == slot_of(namespace)
    assert in_slot_of("jobledger", "jobledger") == "jobledger"


def test_two_servers_with_their_schedulers_append_no_event_twice(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Two ``jobledger serve`` processes at different nodes of one Cluster, each running its
    scheduler: delayed jobs are released once each, whichever scheduler got there first."""
    namespace = namespace_on(cluster, 1, "pair")
    ports = [free_port(), free_port()]
    seeds = [cluster.nodes[0].url, cluster.nodes[2].url]
    with (
        jobledger(
            [*serve_args(tmp_path / "a", ports[0]), "--redis-url", seeds[0], "--namespace", namespace],
            tmp_path / "a.log",
        ) as first,
        jobledger(
            [*serve_args(tmp_path / "b", ports[1]), "--redis-url", seeds[1], "--namespace", namespace],
            tmp_path / "b.log",
        ) as second,
    ):
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        wait_serving(first, bases[0])
        wait_serving(second, bases[1])
        with Client(bases[0]) as a, Client(bases[1]) as b:
            a.put_queue("later")
            ids = [(a if n % 2 else b).submit("later", input=n, delay="1s") for n in range(10)]
            wait_for(lambda: a.queue_size("later") == len(ids), "both schedulers to release the jobs", 15)
            for job_id in ids:
                kinds = [e.type for e in b.history(job_id)]
                assert kinds.count("job_released") == 1, kinds
        for command in (first, second):
            command.process.send_signal(signal.SIGTERM)
            command.process.wait(timeout=30)
    ledger = open_ledger(cluster.url, namespace)
    try:
        released = [
            int(e["job"])
            for runner in ledger.runners
            for e in events(runner.client, runner.keys.namespace)
            if e["type"] == "job_released"
        ]
        assert sorted(released) == sorted(ids)
    finally:
        for runner in ledger.runners:
            runner.client.close()


def test_a_worker_on_the_ledger_reaches_the_namespaces_node(cluster: LocalCluster) -> None:
    """The Worker straight on the ledger (``transport="redis"``) is routed as the server is."""
    namespace = namespace_on(cluster, 2, "direct")
    ledger = connect(cluster.url, namespace)
    try:
        ledger.run(commands.put_queue("q", QueueSettings()))
        created = ledger.run(commands.create_job("q", JobOptions(input=21))).id
        worker = Worker(
            lambda job: job.input * 2, "q", transport="redis", redis_url=cluster.url, namespace=namespace
        )
        thread = threading.Thread(target=lambda: asyncio.run(worker.run_async()), daemon=True)
        thread.start()
        job_key = ledger.keys.build("job", id=created)
        wait_for(lambda: ledger.client.hget(job_key, "status") == b"completed", "the job to complete", 15)
        worker.stop()
        thread.join(timeout=15)
        assert not thread.is_alive()
        assert json.loads(ledger.client.hget(job_key, "output") or b"null") == 42
    finally:
        ledger.client.close()
