"""Ocypod's integration tests, ``tests/test_basic.rs`` of github.com/davechallis/ocypod (Apache-2.0),
ported to HTTP: one Python test per Rust test, the same steps and assertions, against a real
``jobledger serve`` process (see ``conftest.py``), each test run reading statuses both ways.  The
19 tests here need none of Ocypod's background checks; the 7 that do are in
``test_basic_checks.py`` (26 in all).

Where the Rust test calls a ``RedisManager`` function, the port makes the request an Ocypod client
makes for it (``manager.py``)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from tests.ocypod.manager import (
    DEFAULT_QUEUE,
    Conflict,
    Manager,
    NoSuchJob,
    NoSuchQueue,
    QueueWrapper,
    Settings,
    job_request,
)


def test_queue_create_delete(m: Manager) -> None:
    settings = Settings()
    assert m.delete_queue(DEFAULT_QUEUE) is False
    assert m.create_or_update_queue(DEFAULT_QUEUE, settings) is True
    assert m.create_or_update_queue(DEFAULT_QUEUE, settings) is False
    assert m.delete_queue(DEFAULT_QUEUE) is True


def test_queue_delete_jobs(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    for _ in range(10):
        qw.new_default_job()
    assert qw.queue_size() == 10

    qw.next_job()  # running
    assert qw.queue_size() == 9

    payload = qw.next_job()  # completed
    m.update_job(payload["id"], status="completed")
    assert qw.queue_size() == 8

    job_id = qw.next_job()["id"]  # failed
    qw.fail_job(job_id)
    assert qw.queue_size() == 7

    payload = qw.next_job()  # cancelled
    m.update_job(payload["id"], status="cancelled")
    assert qw.queue_size() == 6

    assert m.delete_queue(DEFAULT_QUEUE) is True
    assert qw.job_status(qw.nth(1)) == "running"
    assert qw.job_status(qw.nth(2)) == "completed"
    assert qw.job_status(qw.nth(3)) == "failed"
    assert qw.job_status(qw.nth(4)) == "cancelled"

    for n in range(5, 10):  # queued jobs were deleted
        with pytest.raises(NoSuchJob):
            m.job_status(qw.nth(n))


def test_queue_names(m: Manager) -> None:
    settings = Settings()
    assert m.queue_names() == []
    for name in ("d", "b", "a", "c"):
        assert m.create_or_update_queue(name, settings) is True
    assert m.queue_names() == ["a", "b", "c", "d"]


def test_queue_settings(m: Manager) -> None:
    name = "a"
    settings = Settings(timeout=600, heartbeat_timeout=30, expires_after=86_400, retries=0, retry_delays=())
    with pytest.raises(NoSuchQueue):
        m.queue_settings(name)
    assert m.create_or_update_queue(name, settings) is True
    assert m.queue_settings(name) == settings

    for change in ({"timeout": 0}, {"heartbeat_timeout": 1_000_000}, {"expires_after": 1234}):
        settings = Settings(**{**settings.__dict__, **change})
        assert m.create_or_update_queue(name, settings) is False
        assert m.queue_settings(name) == settings


def test_queue_size(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    assert qw.queue_size() == 0
    for _ in range(3):
        qw.new_default_job()
    assert qw.queue_size() == 3
    for _ in range(2):
        qw.next_job()
    assert qw.queue_size() == 1
    for _ in range(4):
        qw.new_default_job()
    assert qw.queue_size() == 5
    for _ in range(5):  # drain the queue
        qw.next_job()
    for _ in range(5):  # keep asking: the size does not go below 0
        qw.next_empty_job()
    assert qw.queue_size() == 0


def test_basic_summary(m: Manager) -> None:
    expected = {"queues": {}, "statistics": dict.fromkeys(
        ("total_jobs_created", "total_jobs_completed", "total_jobs_retried", "total_jobs_failed",
         "total_jobs_timed_out", "total_jobs_cancelled"), 0)}  # fmt: skip
    assert m.server_info() == expected


def test_job_not_exists(m: Manager) -> None:
    with pytest.raises(NoSuchJob):
        m.job_fields(1)
    with pytest.raises(NoSuchJob):
        m.job_status(1)


def test_job_creation(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    job_id = qw.new_default_job()["id"]
    info = qw.job_meta(job_id)
    assert info["id"] == qw.nth(1)
    assert info["id"] == job_id
    assert info["queue"] == DEFAULT_QUEUE
    assert info["status"] == "queued"
    assert info["started_at"] is None
    assert info["ended_at"] is None
    assert info["last_heartbeat"] is None
    assert info["input"] is None
    assert info["output"] is None

    request = job_request(input="string")
    assert qw.new_job(request)["id"] == qw.nth(2)
    info = qw.job_meta(qw.nth(2))
    assert info["id"] == qw.nth(2)
    assert info["input"] == request["input"]


def test_job_output(m: Manager) -> None:
    with pytest.raises(NoSuchJob):
        m.job_output(123)


def test_tag_creation(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    assert qw.new_default_job()["tags"] is None

    foo_tagged = []
    tags = ["foo", "another-tag", "3rd.tag_example"]
    job_id = qw.new_job(job_request(tags=tags))["id"]
    assert qw.job_meta(job_id)["tags"] == tags
    foo_tagged.append(job_id)

    assert m.tagged_job_ids("some_tag") == []  # an empty list for a tag no job has
    for tag in tags:
        assert m.tagged_job_ids(tag) == [job_id]

    tags = ["foo", "bar"]
    for _ in range(3):
        job_id = qw.new_job(job_request(tags=tags))["id"]
        assert qw.job_meta(job_id)["tags"] == tags
        foo_tagged.append(job_id)

    assert m.tagged_job_ids("foo") == sorted(foo_tagged)


def test_tag_deletion(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    tags = ["a", "b", "c"]
    for tag in tags:
        assert m.tagged_job_ids(tag) == []

    tagged_ids = []
    for _ in range(4):
        job_id = qw.new_job(job_request(tags=tags))["id"]
        assert m.job_fields(job_id)["tags"] == tags
        tagged_ids.append(job_id)

    for tag in tags:
        assert m.tagged_job_ids(tag) == tagged_ids


def test_job_starting(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    given = [1, 2, 3]
    job_id = qw.new_job(job_request(input=given))["id"]

    payload = qw.next_job()
    assert payload["id"] == job_id
    assert payload["input"] == given

    info = qw.job_meta(job_id)
    assert info["queue"] == DEFAULT_QUEUE
    assert info["status"] == "running"
    assert info["started_at"] is not None
    assert info["ended_at"] is None
    assert info["last_heartbeat"] is None
    assert info["input"] == given
    assert info["output"] is None


def test_job_fields(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    meta = qw.new_default_job()
    job_id = meta["id"]

    def one(name: str) -> Any:
        return qw.job_fields(job_id, [name])[name]

    assert one("id") == qw.nth(1)
    assert one("queue") == DEFAULT_QUEUE
    assert one("status") == "queued"
    assert one("tags") is None
    assert one("created_at") == meta["created_at"]
    for name in ("started_at", "ended_at", "last_heartbeat", "input", "output"):
        assert one(name) is None, name
    for name in ("timeout", "heartbeat_timeout", "expires_after", "retries"):
        assert one(name) == meta[name], name
    assert one("retries_attempted") == 0
    assert one("retry_delays") is None

    several = qw.job_fields(job_id, ["status", "output"])
    assert (several["status"], several["output"]) == (meta["status"], meta["output"])

    several = qw.job_fields(job_id, ["id", "tags", "retry_delays"])
    assert (several["id"], several["tags"], several["retry_delays"]) == (
        meta["id"],
        meta["tags"],
        meta["retry_delays"],
    )

    every = m.job_fields(job_id)
    for name in ("id", "status", "output", "tags", "retry_delays"):
        assert every[name] == meta[name], name


def test_update_job_heartbeat(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    qw.new_default_job()
    job_id = qw.next_job()["id"]
    assert qw.job_meta(job_id)["last_heartbeat"] is None

    m.update_job_heartbeat(job_id)
    hb1 = datetime.fromisoformat(qw.job_meta(job_id)["last_heartbeat"])

    time.sleep(1)

    m.update_job_heartbeat(job_id)
    hb2 = datetime.fromisoformat(qw.job_meta(job_id)["last_heartbeat"])

    assert hb2 > hb1


def test_update_job_output(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    with pytest.raises(NoSuchJob) as missing:  # only jobs that exist
        m.set_job_output(21, "foo")
    assert missing.value.args == (21,)

    job_id = qw.new_default_job()["id"]
    with pytest.raises(Conflict):  # only running jobs take output
        m.set_job_output(job_id, "foo")

    job_id = qw.next_job()["id"]
    assert qw.job_meta(job_id)["output"] is None  # unset at first

    m.set_job_output(job_id, "foo")
    assert qw.job_meta(job_id)["output"] == "foo"

    value = {"a": 1, "b": 2}  # overwritten
    m.set_job_output(job_id, value)
    assert qw.job_meta(job_id)["output"] == value


def test_queued_status_transitions(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    job_id = qw.new_default_job()["id"]
    for status in ("queued", "running", "failed", "completed", "timed_out"):  # only fetching moves it on
        with pytest.raises(Conflict):
            m.set_job_status(job_id, status)

    m.set_job_status(job_id, "cancelled")  # a queued job can be cancelled
    info = qw.job_meta(job_id)
    assert info["status"] == "cancelled"
    assert info["ended_at"] is not None


def test_running_status_transitions(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    job_id = qw.new_running_default_job()["id"]
    for status in ("queued", "running"):  # no requeue of a running job; it runs already
        with pytest.raises(Conflict):
            m.set_job_status(job_id, status)

    for status in ("cancelled", "completed", "failed", "timed_out"):
        job_id = qw.new_running_default_job()["id"]
        m.set_job_status(job_id, status)
        info = qw.job_meta(job_id)
        assert info["status"] == status
        assert info["ended_at"] is not None


def test_completed_status_transitions(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    job_id = qw.new_running_default_job()["id"]
    qw.complete_job(job_id)
    for status in ("completed", "queued", "running", "failed", "completed", "timed_out"):
        with pytest.raises(Conflict):  # once completed, its status cannot change
            m.set_job_status(job_id, status)


def test_check_ping(m: Manager) -> None:
    m.check_ping()
