"""The command line's actions against a real server: ``submit`` with every job option, ``cancel``,
``requeue``, ``delete``, ``pause``, ``resume``, and ``launcher create|list|show|delete``, each piped,
on a terminal and with ``--json``, and their refusals (one line, exit 1; bad usage exit 2)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from jobledger.cli.main import build_app
from jobledger.client import Client, NotFound, Submitted
from tests.support.live_server import live_server

PIPED = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None, "NO_COLOR": None, "JOBLEDGER_URL": None}
TERMINAL = {**PIPED, "TTY_COMPATIBLE": "1", "COLUMNS": "200"}


@pytest.fixture
def server(redis_url: str, namespace: str) -> Iterator[str]:
    with live_server(redis_url, namespace) as url, Client(url) as api:
        api.put_queue("emails", timeout="10m", retries=2)
        yield url


def run(url: str, *args: str, terminal: bool = False, code: int = 0) -> str:
    """Run ``jobledger ARGS --url URL``; its stdout (its stderr when it must fail)."""
    result = CliRunner().invoke(build_app(), [*args, "--url", url], env=TERMINAL if terminal else PIPED)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result.stdout if code == 0 else result.stderr


def visible(text: str) -> str:
    """What a terminal shows: the text without its escape sequences."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# submit


def test_submit_takes_every_job_option(server: str) -> None:
    created = run(server, "submit", "emails", "--input", '{"to": "bob"}', "--tag", "a", "--tag", "b",
                  "--priority", "7", "--run-at", "2099-01-02T03:04:05Z", "--unique-key", "bob-welcome",
                  "--quota-key", "bob", "--timeout", "1m", "--heartbeat-timeout", "20s",
                  "--expires-after", "1h", "--max-queued-time", "2h", "--retries", "3",
                  "--retry-backoff", '{"base": "10s", "factor": 2, "max": "1h"}',
                  "--retry-on", "IOError", "--retry-on", "Timeout")  # fmt: skip
    with Client(server) as api:
        job = api.get(int(created)).model_dump(mode="json")
    assert {k: job[k] for k in ("input", "tags", "priority", "status", "run_at", "unique_key", "quota_key",
                                "timeout", "heartbeat_timeout", "expires_after", "max_queued_time",
                                "retries", "retry_backoff", "retry_on")} == {
        "input": {"to": "bob"}, "tags": ["a", "b"], "priority": 7, "status": "scheduled",
        "run_at": "2099-01-02T03:04:05.000000Z", "unique_key": "bob-welcome", "quota_key": "bob",
        "timeout": "1m", "heartbeat_timeout": "20s", "expires_after": "1h", "max_queued_time": "2h",
        "retries": 3, "retry_backoff": {"base": "10s", "factor": 2, "max": "1h"},
        "retry_on": ["IOError", "Timeout"],
    }  # fmt: skip
    # the same unique key while that job lives: its id again, nothing created
    assert run(server, "submit", "emails", "--unique-key", "bob-welcome") == created
    delayed = run(server, "submit", "emails", "--delay", "1h", "--retry-delay", "5s", "--retry-delay", "1m",
                  "--no-retry-on", "ValueError", "--json")  # fmt: skip
    with Client(server) as api:
        job = api.get(json.loads(delayed)["id"]).model_dump(mode="json")
    assert (job["status"], job["retry_delays"], job["no_retry_on"]) == (
        "scheduled",
        ["5s", "1m"],
        ["ValueError"],
    )


def test_submit_of_a_held_unique_key_says_it_printed_the_existing_job(server: str) -> None:
    first = CliRunner().invoke(
        build_app(), ["submit", "emails", "--unique-key", "k1", "--url", server], env=PIPED
    )
    assert first.exit_code == 0 and first.stderr == ""  # created: nothing to say
    again = CliRunner().invoke(
        build_app(), ["submit", "emails", "--unique-key", "k1", "--url", server], env=PIPED
    )
    assert again.exit_code == 0 and again.stdout == first.stdout  # the id alone, for a script
    assert again.stderr.strip() == (
        f"no job created: job {first.stdout.strip()} of queue emails already holds unique key 'k1'; "
        "its id is printed"
    )
    as_json = json.loads(run(server, "submit", "emails", "--unique-key", "k1", "--json"))
    assert as_json == {"id": int(first.stdout), "queue": "emails", "created": False}
    shown = visible(run(server, "submit", "emails", "--unique-key", "k1", terminal=True))
    assert shown.strip() == f"job {first.stdout.strip()} on queue emails (existing)"
    with Client(server) as api:  # the client's richer answer; submit's stays the id
        made = api.submit_job("emails", unique_key="k2")
        assert made.created and api.submit("emails", unique_key="k2") == made.id
        assert api.submit_job("emails", unique_key="k2") == Submitted(made.id, created=False)


def test_submit_refuses_bad_options(server: str) -> None:
    assert "--retry-backoff is not valid JSON" in run(server, "submit", "emails", "--retry-backoff", "10s",
                                                      code=2)  # fmt: skip
    assert "--priority" in run(server, "submit", "emails", "--priority", "101", code=2)
    refused = run(server, "submit", "emails", "--delay", "soon", code=1)
    assert refused.startswith("jobledger: bad request: ") and "delay" in refused
    assert len(refused.splitlines()) == 1


# cancel, requeue, delete


def test_cancel_requeue_and_delete_a_job(server: str) -> None:
    with Client(server) as api:
        job_id = api.submit("emails", "hi")
        assert run(server, "cancel", str(job_id)) == f"{job_id}\n"
        assert api.get(job_id).status == "cancelled"
        assert json.loads(run(server, "requeue", str(job_id), "--json")) == {"id": job_id, "status": "queued"}
        assert api.get(job_id).status == "queued"
        shown = run(server, "cancel", str(job_id), terminal=True)
        assert f"cancelled job {job_id}" in visible(shown) and "\x1b[" in shown
        assert "conflict" in run(server, "cancel", str(job_id), code=1)  # it has ended already
        assert json.loads(run(server, "delete", str(job_id), "--json")) == {"id": job_id, "deleted": True}
        with pytest.raises(NotFound):
            api.get(job_id)
    assert (
        run(server, "delete", str(job_id), code=1) == f"jobledger: not found: job {job_id} does not exist\n"
    )
    assert run(server, "requeue", "999", code=1).startswith("jobledger: not found: ")
    assert "Invalid value for 'ID'" in run(server, "cancel", "x", code=2)


# pause, resume


def test_pause_and_resume_a_queue(server: str) -> None:
    with Client(server) as api:
        job_id = api.submit("emails", "hi")
        assert run(server, "pause", "emails") == "emails\n"
        assert api.queue("emails").model_dump()["paused"] is True
        assert api.fetch("emails") == []  # a paused queue hands nothing out
        assert json.loads(run(server, "resume", "emails", "--json")) == {"queue": "emails", "paused": False}
        assert [job.id for job in api.fetch("emails")] == [job_id]
    assert "paused queue emails" in visible(run(server, "pause", "emails", terminal=True))
    assert run(server, "pause", "nope", code=1) == "jobledger: not found: queue 'nope' does not exist\n"


# launchers


def test_launchers_are_created_listed_shown_and_deleted(server: str) -> None:
    create = ["launcher", "create", "--queue", "emails"]
    template = '{"input": {"digest": true}}'
    cron = int(run(server, *create, "--type", "@cron", "--arguments", "*/5 * * * *", "--template", template,
                   "--max-pending", "1"))  # fmt: skip
    on_event = json.loads(run(server, *create, "--type", "event", "--arguments", "job_completed",
                              "--debounce", "2s", "--json"))["id"]  # fmt: skip
    rows = [line.split("\t") for line in run(server, "launcher", "list").splitlines()]
    assert rows[0] == ["id", "name", "type", "arguments", "queue", "next_at", "paused", "held", "fired",
                       "skipped", "last_job", "pending"]  # fmt: skip
    assert [r[:5] for r in rows[1:]] == [
        [str(cron), "", "@cron", "0 */5 * * * *", "emails"],
        [str(on_event), "", "@event", '{"type":"job_completed"}', "emails"],
    ]
    assert rows[1][5].endswith(":00.000000Z") and rows[2][5] == ""
    shown = json.loads(run(server, "launcher", "show", str(on_event), "--json"))
    assert (shown["arguments"], shown["debounce"], shown["template"]) == ({"type": "job_completed"}, "2s", {})
    fields = dict(line.split("\t") for line in run(server, "launcher", "show", str(cron)).splitlines())
    assert (fields["max_pending"], fields["template"]) == ("1", '{"input":{"digest":true}}')
    assert "launcher" in run(server, "launcher", "list", terminal=True)
    assert [item["id"] for item in json.loads(run(server, "launcher", "list", "--json"))] == [cron, on_event]
    assert run(server, "launcher", "delete", str(cron)) == f"{cron}\n"
    assert run(server, "launcher", "delete", str(cron), code=1).startswith("jobledger: not found: ")
    assert [item["id"] for item in json.loads(run(server, "launcher", "list", "--json"))] == [on_event]


def test_a_named_launcher_is_put_paused_resumed_fired_and_deleted_by_name(server: str) -> None:
    put = ["launcher", "put", "nightly", "--queue", "emails", "--type", "cron", "--arguments", "0 3 * * *",
           "--tz", "Europe/Paris"]  # fmt: skip
    made = json.loads(run(server, *put, "--json"))
    assert made == {"id": made["id"], "name": "nightly", "outcome": "created"}
    assert run(server, *put) == f"{made['id']}\n"  # the same again: unchanged
    assert json.loads(run(server, *put, "--json"))["outcome"] == "unchanged"
    assert "updated launcher nightly" in visible(run(server, *put, "--max-pending", "1", terminal=True))
    shown = json.loads(run(server, "launcher", "show", "nightly", "--json"))
    assert (shown["tz"], shown["max_pending"], shown["paused"]) == ("Europe/Paris", 1, False)
    assert "paused launcher nightly" in visible(run(server, "launcher", "pause", "nightly", terminal=True))
    assert json.loads(run(server, "launcher", "show", "nightly", "--json"))["paused"] is True
    job_id = int(run(server, "launcher", "fire", "nightly"))
    with Client(server) as api:
        assert api.get(job_id).model_dump()["launcher"] == made["id"]
    assert run(server, "launcher", "fire", "nightly", code=1).startswith(
        "jobledger: conflict: "
    )  # max_pending
    run(server, "launcher", "resume", str(made["id"]))
    assert json.loads(run(server, "launcher", "show", "nightly", "--json"))["paused"] is False
    run(server, "launcher", "delete", "nightly")
    assert run(server, "launcher", "show", "nightly", code=1).startswith("jobledger: not found: ")
    numbered = ["launcher", "put", "42", "--queue", "emails", "--type", "@interval", "--arguments", "1h"]
    assert run(server, *numbered, code=1).startswith("jobledger: bad request: ")


def test_launcher_create_refuses_bad_arguments(server: str) -> None:
    create = ["launcher", "create", "--queue", "emails"]
    refused = run(server, *create, "--type", "@cron", "--arguments", "* * * *", code=1)
    assert refused.startswith("jobledger: bad request: ") and "five" in refused
    at = ["--type", "@at", "--arguments", "2099-01-01T00:00:00Z"]
    assert "--template is not valid JSON" in run(server, *create, *at, "--template", "{", code=2)
    on_event = ["--type", "@event", "--arguments", "{type"]
    assert "--arguments is not valid JSON" in run(server, *create, *on_event, code=2)
