"""Ocypod's ``docs/quickstart.md`` (github.com/davechallis/ocypod, Apache-2.0), typed literally: each
curl command as the HTTP request it sends, same path, headers and body, against a real ``jobledger
serve`` process, in the guide's order on a new ledger.  The guide's answers are asserted as given,
but for the fields jobledger adds (every one named below) and two typos of the guide itself, which
Ocypod answers 404 too: ``/queue/example`` for the queue it calls "demo", and ``/job/61`` for job 1
(each is followed by the request the guide meant)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import httpx2
import pytest

from tests.ocypod.manager import connect
from tests.ocypod.server import Served, wipe_ledger
from tests.support.http import RFC3339
from tests.support.ledger import TEST_PARTITIONS

#: The guide's job is job 1: a ledger split into partitions hands out ids that name their partition.
pytestmark = pytest.mark.skipif(
    TEST_PARTITIONS is not None and TEST_PARTITIONS > 1,
    reason="the guide names job 1; a split ledger's ids differ",
)

JSON = {"content-type": "application/json"}  # curl -H 'content-type: application/json'
OCYPOD_JOB_FIELDS = (
    "id", "queue", "status", "tags", "created_at", "started_at", "ended_at", "last_heartbeat", "input",
    "output", "timeout", "heartbeat_timeout", "expires_after", "retries", "retries_attempted",
    "retry_delays", "ended",
)  # fmt: skip


@pytest.fixture
def curl(served: Served, redis_url: str) -> Iterator[httpx2.Client]:
    """An HTTP client on the server, whose ledger is new (the guide's job is job 1)."""
    manager = connect(served.url, redis_url, served.namespace, "route")
    wipe_ledger(manager.ledger)
    try:
        yield manager.http
    finally:
        wipe_ledger(manager.ledger)
        manager.close()


def test_quickstart(curl: httpx2.Client) -> None:
    # $ curl localhost:8023/health
    assert curl.get("/health").content == b'{"status":"healthy"}'

    # $ curl -i -H 'content-type: application/json' -XPUT -d '{"timeout": "10m"}' localhost:8023/queue/demo
    created = curl.put("/queue/demo", headers=JSON, content=b'{"timeout": "10m"}')
    assert created.status_code == 201
    assert (created.headers["location"], created.headers["content-length"]) == ("/queue/demo", "0")

    # $ curl localhost:8023/queue/example   (the guide's typo: Ocypod has no such queue either)
    assert curl.get("/queue/example").status_code == 404
    settings = curl.get("/queue/demo").json()
    shown = {
        "timeout": "10m",
        "heartbeat_timeout": "0s",
        "expires_after": "5m",
        "retries": 0,
        "retry_delays": [],
    }
    assert {name: settings[name] for name in shown} == shown  # and jobledger's own settings beside them

    # re-running the queue creation updates it: 204
    assert curl.put("/queue/demo", headers=JSON, content=b'{"timeout": "10m"}').status_code == 204

    # $ curl -i -H 'content-type: application/json' -XPOST -d '{"input": [1,2,3]}' \
    #       localhost:8023/queue/demo/job
    job = curl.post("/queue/demo/job", headers=JSON, content=b'{"input": [1,2,3]}')
    assert job.status_code == 201
    assert (job.headers["content-length"], job.headers["location"]) == ("1", "/job/1")
    assert (job.headers["content-type"], job.content) == ("application/json", b"1")

    # $ curl localhost:8023/job/1/status
    assert curl.get("/job/1/status").content == b'"queued"'

    # $ curl localhost:8023/job/1
    fields = curl.get("/job/1").json()
    assert RFC3339.match(fields["created_at"])
    assert {name: fields[name] for name in OCYPOD_JOB_FIELDS if name != "created_at"} == {
        "id": 1, "queue": "demo", "status": "queued", "tags": None, "started_at": None, "ended_at": None,
        "last_heartbeat": None, "input": [1, 2, 3], "output": None, "timeout": "10m",
        # the guide shows "1m" and 3 here, which its queue does not give: its settings are 0s and 0
        "heartbeat_timeout": "0s", "expires_after": "5m", "retries": 0, "retries_attempted": 0,
        "retry_delays": None, "ended": False,
    }  # fmt: skip

    # $ curl localhost:8023/queue/demo/job
    assert curl.get("/queue/demo/job").json() == {"id": 1, "input": [1, 2, 3], "attempt": 1}  # + attempt

    # $ curl -i -XPATCH -H 'content-type: application/json' \
    #       -d '{"status": "completed", "output": [2,4,6]}' localhost:8023/job/1
    done = curl.patch("/job/1", headers=JSON, content=b'{"status": "completed", "output": [2,4,6]}')
    assert (done.status_code, done.content) == (204, b"")

    # $ curl -i 'http://localhost:8023/job/61?fields=status,ended_at,output'   (the guide's typo: job 1)
    assert curl.get("/job/61?fields=status,ended_at,output").status_code == 404
    ended = curl.get("/job/1?fields=status,ended_at,output").json()
    assert list(ended) == ["status", "ended_at", "output"]
    assert (ended["status"], ended["output"]) == ("completed", [2, 4, 6])
    assert datetime.fromisoformat(ended["ended_at"]) >= datetime.fromisoformat(fields["created_at"])
