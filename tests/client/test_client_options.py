"""The client keeps no list of the job options: what it sends is told by each value's type (a
timedelta is a duration, in seconds), and its JobSpec names every option the server declares."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from jobledger.client import JobSpec, calls
from jobledger.ledger.requests import JobOptions


def test_job_spec_has_a_field_for_every_job_option() -> None:
    assert {f.name for f in dataclasses.fields(JobSpec)} == set(JobOptions.model_fields)


def test_a_timedelta_is_sent_as_seconds_whatever_the_setting() -> None:
    """A setting the client was never told of (one added to the server later) goes out as the server
    reads a duration, as do those it knows, nested ones too."""
    settings = {"max_queued_time": timedelta(minutes=2), "a_newer_setting": timedelta(seconds=90),
                "retry_backoff": {"base": timedelta(seconds=10), "factor": 2}, "retries": 3}  # fmt: skip
    assert calls.put_queue("q", settings).body == {
        "max_queued_time": 120.0, "a_newer_setting": 90.0, "retry_backoff": {"base": 10.0, "factor": 2},
        "retries": 3,
    }  # fmt: skip


def test_a_job_spec_sends_times_as_rfc3339_and_its_input_as_given() -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    spec = JobSpec(input={"when": "x", "list": (1, 2)}, run_at=at, retry_delays=(timedelta(seconds=1), "2s"),
                   files=[{"name": "a", "sha256": "0" * 64}])  # fmt: skip
    assert spec.body() == {
        "input": {"when": "x", "list": (1, 2)}, "run_at": "2030-01-02T03:04:05.000000Z",
        "retry_delays": [1.0, "2s"], "files": [{"name": "a", "sha256": "0" * 64}],
    }  # fmt: skip
    JobOptions.model_validate(spec.body())
