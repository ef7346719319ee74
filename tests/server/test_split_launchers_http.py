"""``/launcher`` and the dashboard's launchers page over HTTP on a ledger split into three partitions
(on one server): each launcher is made in its queue's partition, the list gathers every partition's,
a launcher is read and deleted in its own partition, and the page shows them all."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.keys import Keys
from tests.server.ui.html import parse
from tests.support.http import app_client, error_of, no_content, put_queue
from tests.support.ledger import one_queue_per_partition

COUNT = 3
INTERVAL = {"type": "@interval", "arguments": "1h"}
EVENT = {"type": "@event", "arguments": {"type": "job_completed"}}


@pytest.fixture
def api(redis_url: str, namespace: str) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, partitions=COUNT) as client:
        yield client


def queues_of_each_partition(namespace: str) -> list[str]:
    return one_queue_per_partition(namespace, COUNT)


def test_launchers_are_made_listed_read_and_deleted_in_their_queue_s_partition(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    queues = queues_of_each_partition(namespace)
    made: dict[int, str] = {}
    for name in queues:
        put_queue(api, name)
        for body in (INTERVAL, EVENT):
            response = api.post("/launcher", json={**body, "queue": name})
            assert response.status_code == 201, response.text
            made[response.json()["id"]] = name
    assert client.get(Keys(namespace).build("partitions")) == str(COUNT).encode()  # split indeed
    assert {i % COUNT for i in made} == set(range(COUNT))
    assert all(i % COUNT == p for p, name in enumerate(queues) for i, q in made.items() if q == name)

    listed = api.get("/launcher").json()
    assert [(item["id"], item["queue"]) for item in listed] == sorted(made.items())
    for launcher_id, name in made.items():
        got = api.get(f"/launcher/{launcher_id}").json()
        assert (got["id"], got["queue"]) == (launcher_id, name)

    gone = max(i for i in made if i % COUNT == 2)
    no_content(api.delete(f"/launcher/{gone}"))
    assert "does not exist" in error_of(api.get(f"/launcher/{gone}"), 404)
    error_of(api.delete(f"/launcher/{gone}"), 404)
    for never in (301, 302, 303):  # an id of each partition that was never handed out
        error_of(api.get(f"/launcher/{never}"), 404)
    assert [item["id"] for item in api.get("/launcher").json()] == sorted(set(made) - {gone})

    response = api.get("/ui/launchers")
    assert response.status_code == 200, response.text[:500]
    rows = parse(response.text).one("table", id="launchers").all("tr", data_launcher=True)
    shown = {int(row.attrs["data-launcher"]) for row in rows}
    assert shown == set(made) - {gone}
