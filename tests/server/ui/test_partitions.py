"""The dashboard on a ledger split into three partitions (on one server), one queue in each: the
overview counts every queue from its partition, a queue's pages and a job's page read their
partition, the failed jobs of every partition page newest first, the actions reach the job's
partition, and the ledger page shows and verifies every partition."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.stream import id_key
from jobledger.ledger.tokens import create_token, digest, new_secret
from jobledger.projections import job_pages
from jobledger.projections.archive import load_record
from jobledger.server.ui import failed_page
from jobledger.server.ui.session import csrf_for
from tests.server.ui.html import Element, parse
from tests.server.ui.test_pages import finish, page
from tests.support.http import app_client, create_job, put_queue
from tests.support.ledger import one_queue_per_partition
from tests.support.replay import archive, local_archive

PARTITIONS = 3


class Split:
    """The app on a ledger of three partitions, with ``queues[p]`` in partition ``p``."""

    def __init__(self, client: TestClient, namespace: str) -> None:
        self.client = client
        self.partitioning = Partitioning(namespace, PARTITIONS)
        self.queues = one_queue_per_partition(namespace, PARTITIONS)
        for name in self.queues:
            put_queue(client, name)

    def keys(self, partition: int) -> Keys:
        return Keys(self.partitioning.namespaces[partition])


@pytest.fixture
def split(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[Split]:
    with app_client(
        redis_url, namespace, partitions=PARTITIONS, blobs=LocalBlobStore(tmp_path / "blobs")
    ) as client:
        yield Split(client, namespace)


def ids_of(doc: Element) -> list[int]:
    return [int(r.attrs["data-job"]) for r in doc.all("tr", data_job=True)]


def walk(ui: TestClient, path: str) -> list[list[int]]:
    """The ids of each page, following the pager's next link from ``path`` to the last page."""
    pages_seen = []
    doc = page(ui, path)
    while True:
        pages_seen.append(ids_of(doc.one("table", id="jobs")))
        following = doc.all("a", rel="next")
        if not following:
            return pages_seen
        doc = page(ui, path.split("?")[0] + following[0].attrs["href"])


def test_the_overview_counts_each_queue_from_its_partition(
    split: Split, frozen: FrozenDateTimeFactory
) -> None:
    ui, (a, b, c) = split.client, split.queues
    for _ in range(3):
        create_job(ui, a)
    for _ in range(2):
        create_job(ui, b)
    finish(ui, b, "completed")
    finish(ui, b, "failed")
    assert ui.put(f"/queue/{c}/pause").status_code == 204
    doc = page(ui, "/ui")
    counts = {
        row.attrs["data-queue"]: {
            td.attrs["data-status"]: int(td.text()) for td in row.all("td", data_status=True)
        }
        for row in doc.one("table", id="queues").all("tr", data_queue=True)
    }
    assert list(counts) == sorted([a, b, c])  # by name, whatever their partitions
    assert {q: {s: n for s, n in found.items() if n} for q, found in counts.items()} == {
        a: {"queued": 3},
        b: {"completed": 1, "failed": 1},
        c: {},
    }
    throughput = {q: doc.one("tr", data_queue=q).one("td", data_throughput=True) for q in (a, b, c)}
    assert [throughput[q].attrs["data-throughput"] for q in (a, b, c)] == ["0", "2", "0"]
    assert "1 failed" in throughput[b].text()
    paused = {
        q: doc.one("tr", data_queue=q).one("td", data_paused=True).attrs["data-paused"] for q in (a, b, c)
    }
    assert paused == {a: "false", b: "false", c: "true"}
    assert all("timeout 5m" in doc.one("tr", data_queue=q).text() for q in (a, b, c))  # settings found


def test_a_queue_page_lists_its_jobs_by_status_and_tag(split: Split) -> None:
    ui, (a, b, _c) = split.client, split.queues
    create_job(ui, a, tags=["red"])  # the same tag in another partition: not listed
    ids = [create_job(ui, b, tags=["red"] if i % 2 else ["blue"]) for i in range(55)]
    assert {i % PARTITIONS for i in ids} == {1}  # b's jobs are partition 1's
    assert walk(ui, f"/ui/queue/{b}") == [ids[::-1][:50], ids[::-1][50:]]
    done = [finish(ui, b, "completed") for _ in range(3)]
    assert done == ids[:3]
    assert walk(ui, f"/ui/queue/{b}?status=completed") == [done[::-1]]
    assert walk(ui, f"/ui/queue/{b}?status=queued") == [ids[3:53], ids[53:]]  # in hand-out order
    red = [i for n, i in enumerate(ids) if n % 2]
    assert walk(ui, f"/ui/queue/{b}?tag=red") == [red[::-1]]
    assert walk(ui, f"/ui/queue/{b}?tag=red&status=completed") == [[ids[1]]]
    assert walk(ui, f"/ui/queue/{a}?tag=blue") == [[]]
    counts = page(ui, f"/ui/queue/{b}").all(data_status=True)
    assert counts and counts == page(ui, f"/ui/queue/{b}").all(data_status=True)


@pytest.mark.parametrize("first_times", [16, 1], ids=["timed-at-once", "timed-in-rounds"])
def test_failed_jobs_of_every_partition_page_newest_first(
    split: Split, frozen: FrozenDateTimeFactory, monkeypatch: pytest.MonkeyPatch, first_times: int
) -> None:
    monkeypatch.setattr(failed_page, "PAGE_SIZE", 4)
    monkeypatch.setattr(job_pages, "FIRST_TIMES", first_times)  # 1: most times read in later rounds
    ui, queues = split.client, split.queues
    made = []
    for n in range(5):
        # ids of partitions 2, 0, 1: not in the order they are made; partition 0 runs ahead at first
        for name in [queues[2], *[queues[0]] * (3 if n < 2 else 1), queues[1]]:
            made.append(create_job(ui, name))
            frozen.tick(timedelta(milliseconds=1))
    ended = {}
    for p, name in enumerate(queues):
        for n in range(sum(i % PARTITIONS == p for i in made)):
            outcome = "completed" if n == 2 else ("failed", "timed_out")[n % 2]  # one of each queue completes
            ended[finish(ui, name, outcome)] = outcome
    newest_first = [i for i in reversed(made) if ended[i] != "completed"]
    assert newest_first != sorted(newest_first, reverse=True)  # ids alone would give another order
    assert len(newest_first) == 16
    assert walk(ui, "/ui/failed") == [newest_first[n : n + 4] for n in range(0, 16, 4)]
    rows = page(ui, "/ui/failed").one("table", id="jobs").all("tr", data_job=True)
    assert [r.one("form").attrs["action"] for r in rows] == [f"/ui/job/{i}/action" for i in newest_first[:4]]
    assert walk(ui, "/ui/failed?page=5") == [[]]
    # filtered, each partition walks its own queues: the same jobs in the same order
    assert walk(ui, "/ui/failed?since=2000-01-01T00:00") == walk(ui, "/ui/failed")
    late = [i for i in newest_first if ended[i] == "timed_out"]  # a client's timeout: kind "timeout"
    assert walk(ui, "/ui/failed?error_kind=timeout") == [late[n : n + 4] for n in range(0, len(late), 4)]


def test_a_job_page_reads_the_job_s_partition(split: Split) -> None:
    ui = split.client
    for name in split.queues:
        job_id = create_job(ui, name, tags=["seen"])
        finish(ui, name, "failed", error={"message": "no"})
        doc = page(ui, f"/ui/job/{job_id}")
        assert doc.one(id="fields").one(data_field="queue").text() == name
        items = doc.one("ol", id="timeline").all("li", data_event_id=True)
        assert [i.attrs["data-type"] for i in items] == ["job_created", "job_started", "job_failed"]
        assert page(ui, f"/ui/job/{job_id}/state").one(id="status").attrs["data-status"] == "failed"


def test_actions_reach_the_partition_of_each_job(split: Split) -> None:
    ui = split.client
    failed = []
    for name in split.queues:
        job_id = create_job(ui, name)
        finish(ui, name, "failed")
        failed.append(job_id)
    assert sorted(i % PARTITIONS for i in failed) == [0, 1, 2]
    for job_id, action in zip(failed, ("requeue", "cancel", "delete"), strict=True):
        form = {"action": action, "back": "failed", "confirm": "yes"}
        response = ui.post(f"/ui/job/{job_id}/action", data=form, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"] == "/ui/failed"
    requeued, cancelled, deleted = failed
    assert ui.get(f"/job/{requeued}/status").json() == "queued"
    assert ui.get(f"/job/{cancelled}/status").json() == "cancelled"
    assert ui.get(f"/job/{deleted}/status").status_code == 404
    last = [ui.get(f"/job/{i}/history").json()[-1] for i in failed]
    assert [(e["type"], e["actor"]) for e in last] == [
        ("job_requeued", "local"),
        ("job_cancelled", "local"),
        ("job_deleted", "local"),
    ]
    assert ids_of(page(ui, "/ui/failed").one("table", id="jobs")) == []


def sign_in(ui: TestClient, secret: str) -> None:
    assert ui.post("/ui/signin", data={"token": secret}, follow_redirects=False).status_code == 303


def test_with_auth_a_job_s_queue_is_read_in_its_partition(redis_url: str, namespace: str) -> None:
    """The token is in the home partition, the job's queue in the job's: a token scoped to the queue
    reaches the job from the dashboard and the API, a token scoped elsewhere is refused naming it."""
    queues = one_queue_per_partition(namespace, PARTITIONS)
    secrets = {"admin": new_secret(), "worker": new_secret(), "stranger": new_secret()}
    scopes = {"admin": ["admin"], "worker": [f"work:{q}" for q in queues], "stranger": ["produce:other"]}
    router = open_ledger(redis_url, namespace, PARTITIONS)
    for name, secret in secrets.items():
        router.run(create_token(name, scopes[name], digest(secret)))
    for runner in router.runners:
        runner.client.close()
    bearer = {name: {"authorization": f"Bearer {secret}"} for name, secret in secrets.items()}
    with app_client(redis_url, namespace, partitions=PARTITIONS, auth=True) as ui:
        jobs = []
        for name in queues:
            assert ui.put(f"/queue/{name}", json={}, headers=bearer["admin"]).status_code == 201
            job_id = ui.post(f"/queue/{name}/job", json={}, headers=bearer["admin"]).json()
            fetched = ui.get(f"/queue/{name}/job", headers=bearer["worker"]).json()
            update = {"status": "failed", "attempt": fetched["attempt"]}
            assert ui.patch(f"/job/{job_id}", json=update, headers=bearer["worker"]).status_code == 204
            jobs.append(job_id)
        assert sorted(i % PARTITIONS for i in jobs) == [0, 1, 2]

        sign_in(ui, secrets["stranger"])
        for name, job_id in zip(queues, jobs, strict=True):
            refused = ui.get(f"/ui/job/{job_id}")
            said = parse(refused.text).one(id="flash").text()
            assert refused.status_code == 403 and "no such job" in said and name not in said
        sign_in(ui, secrets["worker"])
        for job_id in jobs:
            assert page(ui, f"/ui/job/{job_id}").one(id="status").attrs["data-status"] == "failed"
            form = {"action": "requeue", "csrf": csrf_for(secrets["worker"])}
            response = ui.post(f"/ui/job/{job_id}/action", data=form, follow_redirects=False)
            assert response.status_code == 303, response.text
            last = ui.get(f"/job/{job_id}/history", headers=bearer["worker"]).json()[-1]
            assert (last["type"], last["actor"]) == ("job_requeued", "worker")


def test_the_ledger_page_adds_up_the_partitions_and_shows_each(split: Split, client: redis.Redis) -> None:
    ui = split.client
    create_job(ui, split.queues[0])
    create_job(ui, split.queues[0])
    lengths = [client.xlen(split.keys(p).events) for p in range(PARTITIONS)]
    assert lengths == [3, 1, 1]  # a queue_created each, and two job_created in partition 0
    doc = page(ui, "/ui/ledger")
    assert doc.one(id="event-count").attrs["data-count"] == "5"
    assert doc.one(id="archive").text() == "nothing archived"
    rows = doc.one("table", id="partitions").all("tr", data_partition=True)
    assert [r.one("td", data_count=True).attrs["data-count"] for r in rows] == ["3", "1", "1"]
    assert [
        r.one("td", data_namespace=True).attrs["data-namespace"] for r in rows
    ] == split.partitioning.namespaces


def test_the_ledger_page_adds_up_the_partitions_archives(
    split: Split, client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    ui, namespaces = split.client, split.partitioning.namespaces
    for name in split.queues[:2]:
        create_job(ui, name)
    cutoff = int(time.time() * 1000) + 1_000
    archived = [
        archive(redis_url, ns, local_archive(tmp_path / "blobs", split.partitioning.namespace), cutoff)
        for ns in namespaces[:2]
    ]
    assert archived == [2, 2]  # queue_created and job_created in partitions 0 and 1; none in 2
    records = [load_record(client, split.keys(p)) for p in range(2)]
    last_ids = [r.last_id for r in records if r is not None]
    doc = page(ui, "/ui/ledger")
    whole = doc.one(id="archive")
    assert whole.attrs["data-last-id"] == max(last_ids, key=id_key)
    assert "4 events archived" in whole.text() and str(tmp_path) in whole.text()
    assert doc.one(id="event-count").attrs["data-count"] == "1"  # partition 2's queue_created
    rows = doc.one("table", id="partitions").all("tr", data_partition=True)
    assert [r.one("td", data_archived=True).attrs["data-archived"] for r in rows] == ["2", "2", "0"]


def verified(ui: TestClient) -> Element:
    run = parse(ui.post("/ui/ledger/verify", data={}, headers={"hx-request": "true"}).text).one(data_run=True)
    deadline = time.monotonic() + 60
    while "data-ok" not in run.attrs and time.monotonic() < deadline:
        time.sleep(0.05)
        run = parse(ui.get(f"/ui/ledger/verify/{run.attrs['data-run']}").text).one(data_run=True)
    return run


def test_verify_checks_every_partition_and_shows_each(split: Split, client: redis.Redis) -> None:
    ui = split.client
    jobs = []
    for name in split.queues:
        jobs.append(create_job(ui, name))
        finish(ui, name, "failed")
    run = verified(ui)
    assert run.attrs["data-ok"] == "true" and run.text().startswith("ok")
    rows = run.one("table", id="verify-partitions").all("tr", data_partition=True)
    assert [r.attrs["data-ok"] for r in rows] == ["true"] * PARTITIONS
    assert [
        r.one("td", data_namespace=True).attrs["data-namespace"] for r in rows
    ] == split.partitioning.namespaces

    broken = jobs[1]  # partition 1's
    client.hset(split.keys(1).job(broken), "status", "completed")  # what no event says
    run = verified(ui)
    assert run.attrs["data-ok"] == "false" and "1 differences" in run.text()
    rows = run.one("table", id="verify-partitions").all("tr", data_partition=True)
    assert [r.attrs["data-ok"] for r in rows] == ["true", "false", "true"]
    assert f"job:{broken}" in rows[1].text() and "status" in rows[1].text()


def merged_page(
    partitions: list[list[tuple[int, int]]], page_number: int, limit: int
) -> tuple[job_pages.Window, int, int]:
    """The merge worked out over candidates given as (created_at, id), newest first, per partition:
    its window, how many times it read, in how many rounds."""
    offset = (page_number - 1) * limit
    count = offset + limit + 1
    ids = [[i for _, i in part[:count]] for part in partitions]
    when = {i: t for part in partitions for t, i in part}
    first: list[list[int | None]] = [[when[i] for i in part[: job_pages.FIRST_TIMES]] for part in ids]
    merge = job_pages.Merge(offset, limit, ids, first)
    read, rounds = sum(len(t) for t in first), 1
    while wanted := merge.wanted():
        merge = merge.timed([(p, [when[i] for i in chunk]) for p, chunk in wanted])
        read, rounds = read + sum(len(chunk) for _, chunk in wanted), rounds + 1
    return merge.window(), read, rounds


@pytest.mark.parametrize("spread_as", ["even", "one-ahead"])
def test_a_deep_page_of_sixteen_partitions_reads_the_times_it_needs_only(spread_as: str) -> None:
    """Page 200 of 16 partitions of 20,000 jobs each: the same jobs as a sort of them all, reading about
    the page's depth in times, not sixteen times it."""
    n, per = 16, 20_000
    if spread_as == "even":  # made in turn: partition p's j-th newest at time (per - j) * n - p
        partitions = [[((per - j) * n - p, p + (per - j) * n) for j in range(per)] for p in range(n)]
    else:  # partition 0 made every one of the last 15,000, the others before
        partitions = [[(10**6 - j, (per - j) * n) for j in range(per)]] + [
            [(10**5 - j, p + (per - j) * n) for j in range(per)] for p in range(1, n)
        ]
    window, read, rounds = merged_page(partitions, 200, 50)
    everything = sorted((pair for part in partitions for pair in part), reverse=True)
    assert window.ids == [i for _, i in everything[9_950:10_000]] and window.more
    assert read <= 3 * 10_001 and rounds <= 8, (read, rounds)
