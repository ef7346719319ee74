"""Ocypod's integration tests, ``tests/test_basic.rs`` of github.com/davechallis/ocypod (Apache-2.0),
ported to HTTP (see ``test_basic.py``): the 7 that run Ocypod's background checks.  The checks have
no route, so they run as the scheduler's commands, from the test, on the server's namespace; the
server runs none itself (``--no-scheduler``), as Ocypod's tests run none in the background.  Sleeps
are real, as in Ocypod's tests: the server's clock is the machine's.  One assertion differs, where
jobledger deliberately differs (``job_expiry``, see there)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.ocypod.manager import DEFAULT_QUEUE, Manager, NoSuchJob, QueueWrapper, delays, job_request

STATUSES = ("queued", "running", "completed", "failed", "cancelled", "timed_out")


def create_job_in_all_states(m: Manager, queue: str, request: dict[str, Any]) -> dict[str, int]:
    """One job in each of Ocypod's six statuses; the fifth times out (1s timeout, 2s sleep)."""
    running, completed, failed, cancelled = (m.create_job(queue, request) for _ in range(4))
    request = {**request, **job_request(timeout=1)}
    timed_out = m.create_job(queue, request)
    queued = m.create_job(queue, request)

    m.next_queued_job(queue)  # leave the 1st running
    m.next_queued_job(queue)
    m.update_job(completed, status="completed")
    m.next_queued_job(queue)
    m.update_job(failed, status="failed")
    m.next_queued_job(queue)
    m.update_job(cancelled, status="cancelled")
    m.next_queued_job(queue)  # the 5th times out

    time.sleep(2)
    assert m.check_job_timeouts() == [timed_out]

    ids = {"running": running, "completed": completed, "failed": failed, "cancelled": cancelled,
           "timed_out": timed_out, "queued": queued}  # fmt: skip
    for status, job_id in ids.items():
        assert m.job_status(job_id) == status
    return ids


def test_job_deletion(m: Manager) -> None:
    QueueWrapper.with_default_queue(m)
    jobs = create_job_in_all_states(m, DEFAULT_QUEUE, job_request(tags=["tag"]))

    def tagged(job_id: int) -> bool:
        return job_id in m.tagged_job_ids("tag")

    assert m.running_queue_size() == 1
    assert tagged(jobs["running"])
    assert m.delete_job(jobs["running"])
    assert m.running_queue_size() == 0
    assert not tagged(jobs["running"])

    assert tagged(jobs["completed"])
    assert m.delete_job(jobs["completed"])
    assert not tagged(jobs["completed"])

    assert m.failed_queue_size() == 2
    assert tagged(jobs["failed"])
    assert m.delete_job(jobs["failed"])
    assert m.failed_queue_size() == 1
    assert not tagged(jobs["failed"])

    assert tagged(jobs["cancelled"])
    assert m.delete_job(jobs["cancelled"])
    assert not tagged(jobs["cancelled"])

    assert m.failed_queue_size() == 1
    assert tagged(jobs["timed_out"])
    assert m.delete_job(jobs["timed_out"])
    assert m.failed_queue_size() == 0
    assert not tagged(jobs["timed_out"])

    assert m.queue_size(DEFAULT_QUEUE) == 1
    assert tagged(jobs["queued"])
    assert m.delete_job(jobs["queued"])
    assert m.queue_size(DEFAULT_QUEUE) == 0
    assert not tagged(jobs["queued"])

    for status in STATUSES:  # deleting jobs that no longer exist
        assert not m.delete_job(jobs[status])


RETRYING = {"timeout": 1, "heartbeat_timeout": 0, "expires_after": 0, "retries": 3}


def test_job_retry_no_queue(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    job_id = qw.new_running_job(job_request(**RETRYING))["id"]
    info = qw.job_meta(job_id)
    assert (info["retries"], info["retries_attempted"], delays(info)) == (3, 0, None)

    info = qw.fail_job(job_id)  # 1st failure
    assert (info["retries"], info["retries_attempted"], delays(info)) == (3, 0, None)

    assert m.delete_queue(DEFAULT_QUEUE)  # its queue goes

    assert m.check_job_retries() == []  # no retry: no queue to go back to
    info = qw.job_meta(job_id)
    assert (info["status"], info["retries_attempted"]) == ("failed", 0)


def test_job_retries(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    job_id = qw.new_running_job(job_request(**RETRYING))["id"]
    info = qw.job_meta(job_id)
    assert (info["retries"], info["retries_attempted"], delays(info)) == (3, 0, None)

    info = qw.fail_job(job_id)  # 1st failure
    assert (info["retries"], info["retries_attempted"], delays(info)) == (3, 0, None)

    assert m.check_job_retries() == [job_id]  # 1st retry
    info = qw.job_meta(job_id)
    assert (info["status"], info["retries_attempted"]) == ("queued", 1)

    assert m.check_job_retries() == []  # not retried again while queued

    job_id = qw.next_job()["id"]  # 2nd failure: a timeout
    time.sleep(2)
    assert m.check_job_timeouts() == [job_id]
    assert qw.job_status(job_id) == "timed_out"

    assert m.check_job_retries() == [job_id]  # 2nd retry
    info = qw.job_meta(job_id)
    assert (info["status"], info["retries_attempted"]) == ("queued", 2)

    job_id = qw.next_job()["id"]  # 3rd failure
    qw.fail_job(job_id)

    assert m.check_job_retries() == [job_id]  # 3rd retry
    info = qw.job_meta(job_id)
    assert (info["status"], info["retries_attempted"]) == ("queued", 3)

    job_id = qw.next_job()["id"]  # the last failure
    qw.fail_job(job_id)

    assert m.check_job_retries() == []  # no retry left
    info = qw.job_meta(job_id)
    assert (info["status"], info["retries_attempted"]) == ("failed", 3)


def test_job_retry_delays(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    given = [1, 2, 4]
    request = job_request(timeout=0, heartbeat_timeout=0, expires_after=0, retries=3, retry_delays=given)
    job_id = qw.new_running_job(request)["id"]

    qw.fail_job(job_id)  # 1st failure
    info = qw.job_meta(job_id)
    assert (info["status"], info["retries"], info["retries_attempted"]) == ("failed", 3, 0)
    assert delays(info) == given

    assert m.check_job_retries() == []  # no retry yet: its delay has not passed
    info = qw.job_meta(job_id)
    assert (info["status"], info["retries_attempted"]) == ("failed", 0)


def test_job_heartbeat_timeout(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    request = job_request(timeout=3600, heartbeat_timeout=1, expires_after=3600)
    job_a = qw.new_job(request)["id"]
    request = job_request(timeout=3600, heartbeat_timeout=3, expires_after=3600)
    job_b = qw.new_job(request)["id"]
    job_c = qw.new_job(request)["id"]
    for _ in range(3):
        qw.next_job()
    assert [qw.job_status(j) for j in (job_a, job_b, job_c)] == ["running"] * 3

    time.sleep(2)
    assert m.check_job_timeouts() == [job_a]
    assert [qw.job_status(j) for j in (job_a, job_b, job_c)] == ["timed_out", "running", "running"]

    m.update_job_heartbeat(job_c)
    time.sleep(2)
    assert m.check_job_timeouts() == [job_b]
    assert [qw.job_status(j) for j in (job_a, job_b, job_c)] == ["timed_out", "timed_out", "running"]

    assert qw.job_meta(job_a)["last_heartbeat"] is None
    assert qw.job_meta(job_b)["last_heartbeat"] is None
    assert qw.job_meta(job_c)["last_heartbeat"] is not None


def test_job_timeout(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    job_a = qw.new_job(job_request(timeout=1, heartbeat_timeout=3600, expires_after=3600))["id"]
    job_b = qw.new_job(job_request(timeout=3, heartbeat_timeout=3600, expires_after=3600))["id"]
    qw.next_job()
    qw.next_job()
    assert (qw.job_status(job_a), qw.job_status(job_b)) == ("running", "running")

    time.sleep(2)
    assert m.check_job_timeouts() == [job_a]
    assert (qw.job_status(job_a), qw.job_status(job_b)) == ("timed_out", "running")


def test_job_expiry(m: Manager) -> None:
    qw = QueueWrapper.with_default_queue(m)
    request = job_request(timeout=3600, heartbeat_timeout=3600, expires_after=1, retries=0)
    jobs = create_job_in_all_states(m, DEFAULT_QUEUE, request)

    assert m.running_queue_size() == 1  # every job where it belongs
    assert m.failed_queue_size() == 2  # one failed, one timed out
    assert m.ended_queue_size() == 2  # one completed, one cancelled
    assert qw.queue_size() == 1

    # The jobs that ended expire.  Ocypod expires here only the completed and the cancelled job:
    # its failed and timed-out jobs with no retry left move to its ended list at its next retry
    # check, and expire expires_after after that (below).  jobledger ends them when they stop,
    # and expires every ended job expires_after after it ended, as Ocypod's docs say; so all four
    # expire here, and the second check finds none.
    time.sleep(2)
    assert sorted(m.check_job_expiry()) == sorted(
        jobs[s] for s in ("completed", "cancelled", "failed", "timed_out")
    )

    assert m.check_job_retries() == []  # nothing to retry
    time.sleep(2)
    assert m.check_job_expiry() == []  # Ocypod: [failed, timed_out]

    assert m.job_status(jobs["running"]) == "running"
    for status in ("completed", "failed", "cancelled", "timed_out"):
        with pytest.raises(NoSuchJob):
            m.job_status(jobs[status])
    assert m.job_status(jobs["queued"]) == "queued"
