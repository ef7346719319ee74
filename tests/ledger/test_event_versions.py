"""Event versions: an event written at an older version of its type is read and
replayed as the current version.  ``job_timed_out`` v1 named its cause in ``reason``; v2 records it
as an error.  Here a ledger holds a v1 ``job_timed_out`` exactly as the first version wrote it (XADD
straight to the stream, not applied), and the reads and a rebuild must see it as v2: the same job
as a live v2 timeout on the same timeline produces."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger.events import JobTimedOut, decode_entry, upcast
from jobledger.ledger.job_history import inline_ids
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from jobledger.replay.compare import compare
from jobledger.replay.placement import misplaced
from jobledger.replay.rebuild import rebuild
from jobledger.scheduler.loop import tick
from tests.ledger.extension_support import HEARTBEAT_MESSAGE, TIMEOUT_MESSAGE, error
from tests.support.http import app_client
from tests.support.ledger import at, create, events, fetch_one, frozen_clock, put_queue, raw_job

UPCAST = {
    "error": {"kind": "heartbeat_timeout", "message": HEARTBEAT_MESSAGE},
    "ended": False,
    "retry_at": at(40),
}


def started_job(ledger: Ledger, frozen: FrozenDateTimeFactory) -> int:
    """A job running since START, with a 10s heartbeat_timeout and one retry 30s after a failure."""
    put_queue(ledger, "q", timeout="0s", heartbeat_timeout="10s", retries=1, retry_delays=["30s"])
    job_id = create(ledger, input={"n": 1}, tags=["t"])
    assert fetch_one(ledger).id == job_id
    frozen.tick(10)  # its heartbeat deadline
    return job_id


def xadd_v1_timeout(client: redis.Redis, namespace: str, job_id: int) -> str:
    """Append, without applying it, the job_timed_out v1 that the first version wrote at 10s."""
    data = {"reason": "heartbeat", "ended": False, "retry_at": at(40)}
    fields = {"type": "job_timed_out", "v": "1", "at": str(at(10)), "job": str(job_id), "queue": "q",
              "data": json.dumps(data, separators=(",", ":"))}  # fmt: skip
    entry_id: bytes = client.xadd(Keys(namespace).events, fields)  # type: ignore[arg-type, assignment]
    return entry_id.decode()


@pytest.fixture
def old(ledger: Ledger) -> tuple[int, str]:
    """The test's namespace: a job created and started by commands, then a v1 timeout appended."""
    with frozen_clock() as frozen:
        job_id = started_job(ledger, frozen)
    return job_id, xadd_v1_timeout(ledger.client, ledger.keys.namespace, job_id)


def rebuilt(client: redis.Redis, namespace: str) -> str:
    """Rebuild ``namespace`` into a new one, and give it the stream too, so that it can be served."""
    target = namespace + "-rebuilt"
    assert rebuild(client, namespace, target) == 4  # queue_created, job_created, job_started, job_timed_out
    assert client.copy(Keys(namespace).events, Keys(target).events)
    return target


def live_v2(client: redis.Redis, namespace: str) -> str:
    """Another namespace on the same timeline, where the scheduler times the job out itself (v2)."""
    live = namespace + "-live"
    with frozen_clock() as frozen:
        ledger = Ledger(client, live)
        job_id = started_job(ledger, frozen)
        assert tick(ledger)["timeouts"] == [job_id]
    return live


# --- the upcaster ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "kind", "message"),
    [("heartbeat", "heartbeat_timeout", HEARTBEAT_MESSAGE), ("timeout", "timeout", TIMEOUT_MESSAGE)],
)
def test_v1_reason_becomes_the_v2_error(reason: str, kind: str, message: str) -> None:
    v1 = {"reason": reason, "ended": True}
    assert upcast("job_timed_out", 1, v1) == {"error": {"kind": kind, "message": message}, "ended": True}
    assert v1 == {"reason": reason, "ended": True}  # the stored data is not touched
    assert JobTimedOut.version == 2


def test_current_data_passes_unchanged() -> None:
    v2 = {"error": {"kind": "queued_timeout", "message": "m"}, "ended": True}
    assert upcast("job_timed_out", 2, v2) == v2
    event = decode_entry(b"1-0", {b"type": b"job_timed_out", b"v": b"2", b"at": b"5", b"job": b"1",
                                  b"queue": b"q", b"data": json.dumps(v2).encode()})  # fmt: skip
    assert event.item()["data"] == v2


# --- reads present it upcast ----------------------------------------------------------------------


def test_the_event_feed_presents_a_v1_event_upcast(
    redis_url: str, namespace: str, old: tuple[int, str]
) -> None:
    job_id, event_id = old
    with app_client(redis_url, namespace) as api:
        page = api.get("/events", params={"type": "job_timed_out"}).json()
    item: dict[str, Any] = page["events"][0]
    assert len(page["events"]) == 1
    assert item == {"id": event_id, "type": "job_timed_out", "at": "2030-01-01T00:00:10.000000Z",
                    "queue": "q", "job": job_id, "actor": "local", "data": UPCAST}  # fmt: skip


def test_the_job_history_presents_a_v1_event_upcast(
    redis_url: str, client: redis.Redis, namespace: str, old: tuple[int, str]
) -> None:
    job_id, event_id = old
    with app_client(redis_url, rebuilt(client, namespace)) as api:
        history = api.get(f"/job/{job_id}/history").json()
        by_job = api.get("/events", params={"job": job_id}).json()["events"]
    assert [i["type"] for i in history] == ["job_created", "job_started", "job_timed_out"]
    assert (history[-1]["id"], history[-1]["data"]) == (event_id, UPCAST)
    assert history[-1]["actor"] == "local"  # written before events recorded their actor
    assert "reason" not in json.dumps(history)
    assert by_job == history


# --- replay applies it as the current version -----------------------------------------------------


def test_rebuild_applies_a_v1_event_as_v2(client: redis.Redis, namespace: str, old: tuple[int, str]) -> None:
    job_id, _ = old
    target = rebuilt(client, namespace)
    ledger = Ledger(client, target)
    view = ledger.read(readers.job(job_id))
    assert (view["status"], view["ended"], view["attempt"]) == ("timed_out", False, 1)
    assert view["errors"] == [error(10, 1, "heartbeat_timeout", HEARTBEAT_MESSAGE)]
    assert view["retry_at"] == "2030-01-01T00:00:40.000000Z"
    assert misplaced(client, target) == []
    with frozen_clock() as frozen:  # the rebuilt ledger goes on: the retry comes at 40s, not before
        frozen.tick(39.999)
        assert tick(ledger)["retries"] == []
        frozen.tick(0.001)
        assert tick(ledger)["retries"] == [job_id]
    assert raw_job(ledger, job_id)["status"] == "queued"


def test_rebuilt_v1_equals_a_live_v2_timeout(
    client: redis.Redis, namespace: str, old: tuple[int, str]
) -> None:
    job_id, _ = old
    target, live = rebuilt(client, namespace), live_v2(client, namespace)
    (written,) = [e for e in events(client, live, job_id) if e["type"] == "job_timed_out"]
    assert (written["v"], json.loads(written["data"])) == ("2", UPCAST)
    rebuilt_job, live_job = raw_job(Ledger(client, target), job_id), raw_job(Ledger(client, live), job_id)
    # every projection is the same but the job's index of event ids (ids are the server's own time),
    # inline in its hash
    assert {**rebuilt_job, "h": ""} == {**live_job, "h": ""}
    assert len(inline_ids(rebuilt_job["h"])) == len(inline_ids(live_job["h"])) == 3
    differences = compare(client, live, target)
    assert [d.key for d in differences] == [f"job:{job_id}"]
    (expected_kind, expected), (actual_kind, actual) = differences[0].expected, differences[0].actual
    assert expected_kind == actual_kind == "hash"
    assert {k for k in expected if expected[k] != actual.get(k)} == {b"h"}
