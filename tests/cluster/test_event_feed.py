"""The event feed of a ledger split over a three-node Valkey Cluster: ``GET /events`` merges the
partitions' streams, read each on its own node, in time order; ``GET /events/stream`` follows every
node at once."""

from __future__ import annotations

from typing import Any

import httpx2

from jobledger.ledger import commands
from jobledger.ledger.events import decode_entry
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.stream import id_key
from tests.cluster.test_partitions import close, nodes_of
from tests.server.test_events_partitions import BASE_MS, Clock, _seen
from tests.server.test_events_stream import Sse
from tests.support.cluster_redis import LocalCluster
from tests.support.live_server import live_server


def test_the_feed_merges_partitions_on_different_nodes(cluster: LocalCluster) -> None:
    clock = Clock()
    router = open_ledger(cluster.url, "feed", clock=clock)
    try:
        count = router.partitioning.count
        where = nodes_of(cluster, router)
        queues = [f"feed-{n}" for n in range(12)]
        for n, name in enumerate(queues):
            clock.now = BASE_MS - n
            router.run(commands.put_queue(name, QueueSettings()))
        for r in range(3):
            for n, name in enumerate(queues):  # later queues' jobs happen earlier than they are written
                clock.now = BASE_MS + 1000 * r - 10 * n
                router.run(commands.create_job(name, JobOptions(input=r)))
        found: list[tuple[Any, ...]] = []
        for p, runner in enumerate(router.runners):  # each partition's stream, from its own node
            for entry_id, fields in runner.client.xrange(runner.keys.events):
                event = decode_entry(entry_id, fields)
                found.append((event.at, p, id_key(event.id), _seen(event.item())))
        expected = [seen for *_, seen in sorted(found, key=lambda f: f[:3])]
        assert len({where[router.partitioning.of_queue(name)] for name in queues}) == 3  # every node

        with live_server(cluster.url, "feed") as server, httpx2.Client(base_url=server, timeout=10) as http:
            items: list[dict[str, Any]] = []
            after = None
            while True:
                page = http.get("/events", params={"limit": 7, **({"after": after} if after else {})}).json()
                items += page["events"]
                if (after := page["next"]) is None:
                    break
            assert [_seen(i) for i in items] == expected

            with http.stream("GET", "/events/stream", params={"type": "job_created"}) as response:
                assert response.status_code == 200
                sse = Sse(response)
                clock.now = BASE_MS + 10_000
                live = [router.run(commands.create_job(name, JobOptions())).id for name in queues]
                got = [sse.next_event()[1]["job"] for _ in live]
            assert sorted(got) == sorted(live)
            assert len({where[i % count] for i in got}) == 3
    finally:
        close(router)
