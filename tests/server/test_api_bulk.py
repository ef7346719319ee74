"""POST /bulk: requeue, cancel or delete every job that matches a filter, against a real server; the
operation's record at GET /bulk/{operation}, and its events in the ledger."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.bulk import BulkRequest, bulk_jobs, bulk_start
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from jobledger.projections import job_search
from tests.support.http import app_client, error_of, put_queue, unchanged
from tests.support.ledger import events, one_queue_per_partition

QUEUES = ("q", "other")


def _failed(api: TestClient, n: int, queue: str = "q", kind: str = "E", **body: Any) -> list[int]:
    """``n`` jobs of ``queue`` that ran and failed for good with an error of ``kind``."""
    ids: list[int] = []
    for at in range(0, n, 500):
        made = api.post(
            f"/queue/{queue}/jobs", json=[{"input": {"n": i}, **body} for i in range(at, min(n, at + 500))]
        )
        started = api.get(f"/queue/{queue}/job?count=500").json()
        assert sorted(j["id"] for j in started) == sorted(made.json())
        error = {"kind": kind, "message": "boom"}
        updates = [{"id": j["id"], "status": "failed", "error": error} for j in started]
        assert api.patch("/jobs", json={"updates": updates}).status_code == 200
        ids += made.json()
    return ids


def _statuses(api: TestClient, ids: list[int]) -> list[str]:
    return [api.get(f"/job/{i}/status").json() for i in ids]


def test_a_requeue_acts_on_every_job_of_its_filter_and_names_itself_on_each(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    mine = _failed(api, 7, kind="Timeout")
    other_kind = _failed(api, 2, kind="Bad")
    other_queue = _failed(api, 2, queue="other", kind="Timeout")
    answer = api.post(
        "/bulk", json={"action": "requeue", "queue": "q", "status": "failed", "error_kind": "Timeout"}
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["matched"] == 7 and result["done"] == 7 and result["finished"] is True
    operation = result["operation"]
    assert _statuses(api, mine) == ["queued"] * 7
    assert _statuses(api, other_kind + other_queue) == ["failed"] * 4
    # the audit: one start, a requeue of each job naming the operation, one end
    audit = api.get(f"/events?operation={operation}&limit=100").json()["events"]
    assert [e["type"] for e in audit] == ["bulk_started", *["job_requeued"] * 7, "bulk_finished"]
    assert audit[0]["id"] == operation and audit[0]["data"]["error_kind"] == "Timeout"
    assert sorted(e["job"] for e in audit[1:-1]) == sorted(mine)
    assert all(e["data"]["operation"] == operation for e in audit[1:])
    assert audit[-1]["data"] == {"operation": operation, "matched": 7, "done": 7}
    record = api.get(f"/bulk/{operation}").json()
    assert record["action"] == "requeue" and record["done"] == 7 and record["matched"] == 7
    assert record["filter"] == {"queue": "q", "status": "failed", "error_kind": "Timeout"}
    assert record["finished_at"] is not None and record["running"] is False
    # a single requeue of one of them names no operation
    assert all("operation" not in e["data"] for e in events(client, namespace) if e["type"] == "job_failed")


def test_a_dry_run_counts_and_changes_nothing(api: TestClient, client: redis.Redis, namespace: str) -> None:
    ids = _failed(api, 5)
    with unchanged(client, namespace):
        answer = api.post("/bulk", json={"action": "delete", "queue": "q", "dry_run": True})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"operation": None, "matched": 5, "done": 0, "finished": True}
    assert _statuses(api, ids) == ["failed"] * 5


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"action": "retry", "queue": "q"},
        {"action": "requeue", "queue": "no such name!"},
        {"action": "requeue", "status": "lost"},
        {"action": "requeue", "since": "yesterday"},
        {"action": "requeue", "since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
        {"action": "requeue", "ids": [0]},
        {"action": "requeue", "ids": "1,2"},
        {"action": "requeue", "tag": ""},
        {"action": "requeue", "error_kind": "x" * 101},
        {"action": "requeue", "dry_run": "yes"},
        {"action": "requeue", "queues": ["q"]},
        {"action": "requeue", "status": []},
        {"action": "requeue", "status": ["failed", "lost"]},
    ],
)
def test_a_bad_filter_is_400_and_appends_nothing(
    api: TestClient, client: redis.Redis, namespace: str, body: dict[str, Any]
) -> None:
    _failed(api, 2)
    with unchanged(client, namespace):
        error_of(api.post("/bulk", json=body), 400)


def test_cancel_by_tag_and_time_window_and_delete_by_ids(api: TestClient) -> None:
    tagged = api.post("/queue/q/jobs", json=[{"tags": ["red"]}, {"tags": ["red"]}, {"tags": ["blue"]}]).json()
    answer = api.post(
        "/bulk", json={"action": "cancel", "queue": "q", "tag": "red", "since": "2000-01-01T00:00:00Z"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["done"] == 2
    assert _statuses(api, tagged) == ["cancelled", "cancelled", "queued"]
    none = api.post("/bulk", json={"action": "cancel", "queue": "q", "until": "2000-01-01T00:00:00Z"})
    assert none.json()["matched"] == 0
    deleted = api.post("/bulk", json={"action": "delete", "ids": tagged[:2]})
    assert deleted.json()["done"] == 2
    assert [api.get(f"/job/{i}").status_code for i in tagged] == [404, 404, 200]


def test_a_filter_of_several_statuses_takes_a_job_of_any_of_them(api: TestClient) -> None:
    failed = _failed(api, 2)
    cancelled = api.post("/queue/q/job", json={}).json()
    assert api.patch(f"/job/{cancelled}", json={"status": "cancelled"}).status_code == 204
    waiting = api.post("/queue/q/job", json={}).json()
    body = {"action": "cancel", "queue": "q", "status": ["failed", "cancelled", "queued"]}
    assert api.post("/bulk", json={**body, "dry_run": True}).json()["matched"] == 3  # cancelled: not again
    ids_only = {"action": "requeue", "status": ["failed", "queued"], "ids": [*failed, cancelled, waiting]}
    answer = api.post("/bulk", json=ids_only).json()
    assert (answer["matched"], answer["done"]) == (2, 2)  # the cancelled job is of another status
    assert _statuses(api, [*failed, cancelled, waiting]) == ["queued", "queued", "cancelled", "queued"]
    record = api.get(f"/bulk/{answer['operation']}").json()
    assert record["filter"]["status"] == ["failed", "queued"]


def test_a_job_the_action_does_not_take_is_skipped_not_forced(api: TestClient) -> None:
    failed = _failed(api, 2)
    running = api.post("/queue/q/job", json={}).json()
    api.get("/queue/q/job")
    answer = api.post("/bulk", json={"action": "requeue", "ids": [*failed, running, 10_000]})
    assert answer.json()["matched"] == 2 and answer.json()["done"] == 2
    assert _statuses(api, [running]) == ["running"]


def test_a_long_operation_answers_202_and_its_progress_is_readable(api: TestClient) -> None:
    _failed(api, 1200)
    answer = api.post("/bulk?wait=0", json={"action": "requeue", "queue": "q"})
    assert answer.status_code == 202, answer.text
    operation = answer.json()["operation"]
    assert answer.headers["location"] == f"/bulk/{operation}"
    for _ in range(200):  # its end is recorded a moment before its run leaves this server's list
        record = api.get(f"/bulk/{operation}").json()
        if record["finished_at"] and not record["running"]:
            break
    assert record["done"] == 1200 and record["matched"] == 1200 and not record["running"]


def test_resume_runs_what_is_left_under_the_same_id(api: TestClient, ledger: Ledger) -> None:
    ids = _failed(api, 4)
    cut_short = BulkRequest.model_validate({"action": "requeue", "queue": "q"})
    operation = ledger.run(bulk_start(cut_short))  # a run that did one batch and stopped
    assert ledger.run(bulk_jobs(0, "requeue", operation, cut_short, ids[:1])) == (1, 1)
    assert api.get(f"/bulk/{operation}").json()["finished_at"] is None
    answer = api.post(f"/bulk/{operation}")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"operation": operation, "matched": 3, "done": 3, "finished": True}
    assert _statuses(api, ids) == ["queued"] * 4
    assert api.get(f"/bulk/{operation}").json()["done"] == 4
    error_of(api.post(f"/bulk/{operation}"), 409)  # it finished
    error_of(api.post("/bulk/1-0"), 404)
    error_of(api.get("/bulk/1-0"), 404)


def test_on_a_split_ledger_an_operation_fans_out_to_every_partition(redis_url: str, namespace: str) -> None:
    router = open_ledger(redis_url, namespace, 3)  # split before the server opens it
    try:
        names = one_queue_per_partition(namespace, 3)
    finally:
        for runner in router.runners:
            runner.client.close()
    with app_client(redis_url, namespace) as api:
        made: list[int] = []
        for name in names:
            put_queue(api, name)
            made += _failed(api, 3, queue=name)
        assert {i % 3 for i in made} == {0, 1, 2}
        preview = api.post("/bulk", json={"action": "requeue", "status": "failed", "dry_run": True})
        assert preview.json()["matched"] == 9
        answer = api.post("/bulk", json={"action": "requeue", "status": "failed"}).json()
        assert answer["matched"] == answer["done"] == 9
        assert _statuses(api, made) == ["queued"] * 9
        audit = api.get(f"/events?operation={answer['operation']}&limit=100").json()["events"]
        assert sorted(e["job"] for e in audit if e["type"] == "job_requeued") == sorted(made)
        assert api.get(f"/bulk/{answer['operation']}").json()["done"] == 9
        by_ids = api.post("/bulk", json={"action": "cancel", "ids": made[::2]}).json()
        assert by_ids["done"] == len(made[::2])


def test_scopes_on_every_queue_touched_and_nothing_appended_when_refused(
    redis_url: str, namespace: str, ledger: Ledger, client: redis.Redis
) -> None:
    secrets = {}
    for name, scopes in {"admin": ["admin"], "q-worker": ["work:q"], "worker": ["work:*"]}.items():
        secrets[name] = new_secret()
        ledger.run(create_token(name, scopes, digest(secrets[name])))
    with app_client(redis_url, namespace, auth=True) as api:
        api.headers["authorization"] = f"Bearer {secrets['admin']}"
        for name in QUEUES:
            put_queue(api, name)
        mine, theirs = _failed(api, 2), _failed(api, 2, queue="other")

        def as_(name: str, body: dict[str, Any]) -> Any:
            return api.post("/bulk", json=body, headers={"authorization": f"Bearer {secrets[name]}"})

        with unchanged(client, namespace):
            assert "'other'" in error_of(as_("q-worker", {"action": "requeue", "status": "failed"}), 403)
            error_of(as_("q-worker", {"action": "requeue", "ids": [*mine, *theirs]}), 403)
            error_of(as_("worker", {"action": "delete", "queue": "q"}), 403)  # a delete needs admin
        assert as_("q-worker", {"action": "requeue", "queue": "q"}).json()["done"] == 2
        answer = as_("worker", {"action": "cancel", "ids": theirs})
        assert answer.json()["done"] == 2
        started = api.get(f"/events?operation={answer.json()['operation']}").json()["events"][0]
        assert started["type"] == "bulk_started" and started["actor"] == "worker"


def test_search_finds_jobs_by_a_value_in_their_input_output_or_error_in_bounded_pages(
    api: TestClient,
) -> None:
    failed = _failed(api, 2, kind="DiskFull")
    inputs = [{"input": {"to": f"user{i}@example.com"}} for i in range(30)]
    ids = api.post("/queue/q/jobs", json=inputs).json()
    found = api.get("/queue/q/jobs?search=user7@").json()
    assert [j["id"] for j in found["jobs"]] == [ids[7]] and found["next"] is None
    assert [j["id"] for j in api.get("/queue/q/jobs?search=DiskFull&status=failed").json()["jobs"]] == failed
    assert api.get("/queue/q/jobs?search=DiskFull&status=queued").json()["jobs"] == []
    paged = api.get("/queue/q/jobs?search=example.com&limit=10").json()
    assert [j["id"] for j in paged["jobs"]] == ids[:10] and paged["next"] == ids[9]
    rest = api.get(f"/queue/q/jobs?search=example.com&limit=100&cursor={paged['next']}").json()
    assert [j["id"] for j in rest["jobs"]] == ids[10:]
    later = api.get("/queue/q/jobs?search=example.com&since=2999-01-01T00:00:00Z").json()
    assert later["jobs"] == []
    error_of(api.get("/queue/q/jobs?search="), 400)
    error_of(api.get("/queue/q/jobs?search=x&since=soon"), 400)
    error_of(api.get("/queue/nope/jobs?search=x"), 404)


def test_a_search_page_reads_at_most_its_budget(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_search, "SCAN_BUDGET", 5)
    ids = _failed(api, 12)
    first = api.get("/queue/q/jobs?search=nowhere").json()
    assert first == {"jobs": [], "next": ids[4]}
    # the last job's input, which no other job's fields hold (a bare number could be part of a time)
    hit = api.get("/queue/q/jobs", params={"search": '{"n":11}', "cursor": ids[9]}).json()
    assert [j["id"] for j in hit["jobs"]] == [ids[11]] and hit["next"] is None
