"""Each job option and queue setting is declared once, in the models of ``ledger/requests.py``: its
description there, its kind read from its annotation, and the Lua scripts' lists of names written
from the models when the scripts are composed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from jobledger.ledger import commands
from jobledger.ledger.durations import format_ms
from jobledger.ledger.events import JobCreated
from jobledger.ledger.option_kinds import kind, named, shown
from jobledger.ledger.option_lists import LISTS, job_defaults, job_numbers, job_own, job_policies
from jobledger.ledger.requests import Backoff, Count, Duration, JobOptions, QueueSettings, Tags, Time
from jobledger.ledger.runner import Ledger
from jobledger.ledger.scripts import CompositionError, Library
from jobledger.projections import readers
from tests.support.ledger import create, job


class Sample(BaseModel):
    wait: Duration | None = None
    waits: list[Duration] = []
    at: Time | None = None
    count: Count = 0
    flag: bool = False
    name: str | None = None
    tags: Tags | None = None
    backoff: Backoff | None = None
    anything: object = None


def test_every_option_and_setting_says_what_it_does() -> None:
    for model in (JobOptions, QueueSettings, Backoff):
        assert [n for n, f in model.model_fields.items() if not f.description] == [], model.__name__


def test_a_fields_kind_is_read_from_its_annotation() -> None:
    kinds = {name: kind(field) for name, field in Sample.model_fields.items()}
    assert kinds == {"wait": "duration", "waits": "durations", "at": "time", "count": "number",
                     "flag": "flag", "name": "text", "tags": "list", "backoff": "model",
                     "anything": "any"}  # fmt: skip
    assert named(JobOptions, "duration") == ("timeout", "heartbeat_timeout", "expires_after", "delay",
                                             "max_queued_time")  # fmt: skip


def test_shown_writes_durations_compactly_nested_models_too() -> None:
    data = {"wait": 90_000, "waits": [1000, 60_000], "count": 3,
            "backoff": {"max": 3_600_000, "base": 10_000, "factor": 2}}  # fmt: skip
    assert shown(Sample, data) == {"wait": "1m30s", "waits": ["1s", "1m"], "count": 3,
                                   "backoff": {"base": "10s", "factor": 2, "max": "1h"}}  # fmt: skip
    assert list(shown(Sample, data)["backoff"]) == ["base", "factor", "max"]


def test_the_lists_of_names_split_a_jobs_options_by_where_they_come_from() -> None:
    assert set(job_defaults()) == set(JobOptions.model_fields) & set(QueueSettings.model_fields)
    assert set(job_numbers()) | set(job_policies()) == set(job_defaults())
    assert {kind(QueueSettings.model_fields[n]) for n in job_numbers()} <= {"duration", "number"}
    assert "max_queued_time" in job_numbers() and "retry_backoff" in job_policies()
    assert not set(job_own()) & set(QueueSettings.model_fields)
    assert {"tags", "unique_key", "quota_key", "files"} <= set(job_own())
    # every option the create script copies is one the event records
    assert set(job_own()) | set(job_defaults()) <= set(JobCreated.model_fields)


def test_a_lua_file_asking_for_names_gets_them_from_the_models(tmp_path: Path) -> None:
    (tmp_path / "ledger/lua").mkdir(parents=True)
    (tmp_path / "ledger/lua/go.lua").write_text(
        'local SETTINGS = --[[ @names "queue_settings" ]] {}\nreturn SETTINGS\n'
    )
    script = Library(tmp_path).compose("ledger/lua/go.lua")
    listed = ", ".join(f"'{name}'" for name in QueueSettings.model_fields)
    assert f"local SETTINGS = {{{listed}}}\n" in script


def test_a_lua_file_asking_for_a_list_there_is_none_of_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ledger/lua").mkdir(parents=True)
    (tmp_path / "ledger/lua/go.lua").write_text('local X = --[[ @names "job_colours" ]] {}\n')
    with pytest.raises(CompositionError, match=r"go\.lua asks for the names 'job_colours': there are job_"):
        Library(tmp_path).compose("ledger/lua/go.lua")
    assert "queue_settings" in LISTS


def test_every_setting_a_queue_is_given_reads_back_and_reaches_its_jobs(ledger: Ledger) -> None:
    given = QueueSettings(
        timeout=61, heartbeat_timeout=7, expires_after=3601, retries=2, retry_delays=[5, 9],
        retry_backoff=Backoff(base=3), priority=4, max_queued_time=11, max_running=3, max_running_per_key=1,
        retry_on=["net"], no_retry_on=["bad"], paused=True, max_file_size=1000, max_job_bytes=5000,
    )  # fmt: skip
    defaults = QueueSettings()
    assert [n for n in QueueSettings.model_fields if getattr(given, n) == getattr(defaults, n)] == []
    ledger.run(commands.put_queue("q", given))
    assert ledger.read(readers.queue("q")).model_dump() == given.model_dump()
    shown_job = job(ledger, create(ledger))
    for name in job_defaults():
        assert shown_job[name] == shown(QueueSettings, given.model_dump())[name], name
    assert shown_job["timeout"] == format_ms(61_000)
