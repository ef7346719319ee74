"""The ``jobs`` commands against a real server: ``jobs list Q`` with ``--status`` and ``--search``,
and ``jobs requeue|cancel|delete`` with a filter, a preview count and a confirmation (or ``--yes``);
and the client's errors importable from the top (``from jobledger import NotFound``)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from jobledger.cli.main import build_app
from jobledger.client import Client
from tests.support.live_server import live_server

PIPED = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None, "NO_COLOR": None, "JOBLEDGER_URL": None}


@pytest.fixture
def server(redis_url: str, namespace: str) -> Iterator[str]:
    with live_server(redis_url, namespace) as url, Client(url) as api:
        api.put_queue("emails")
        ids = api.submit_many(
            "emails", [{"input": {"to": f"user{i}"}, "tags": ["welcome"]} for i in range(4)]
        )
        for job in api.fetch("emails", count=3):
            api.fail(job.id, error={"kind": "SMTPDown", "message": "no route"})
        assert len(ids) == 4
        yield url


def run(url: str, *args: str, code: int = 0, answer: str | None = None) -> str:
    result = CliRunner().invoke(build_app(), [*args, "--url", url], env=PIPED, input=answer)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result.stdout


def statuses(url: str) -> list[str]:
    with Client(url) as api:
        return [j["status"] for j in api.jobs("emails")["jobs"]]


def test_jobs_list_by_status_and_search(server: str) -> None:
    listed = json.loads(run(server, "jobs", "list", "emails", "--status", "failed", "--json"))
    assert [j["status"] for j in listed["jobs"]] == ["failed"] * 3 and listed["next"] is None
    found = run(server, "jobs", "list", "emails", "--search", "user3").splitlines()
    assert len(found) == 2 and found[1].split("\t")[1] == "queued"  # a header, then the job


def test_requeue_asks_with_the_preview_count_and_acts_on_yes(server: str) -> None:
    assert run(server, "jobs", "requeue", "--queue", "emails", "--dry-run").strip() == "3"
    assert statuses(server).count("failed") == 3
    args = ["jobs", "requeue", "--queue", "emails", "--error-kind", "SMTPDown", "--url", server]
    refused = CliRunner().invoke(build_app(), args, env=PIPED, input="n\n")
    assert refused.exit_code == 1 and "requeue 3 job(s)?" in refused.stdout
    assert statuses(server).count("failed") == 3
    assert run(
        server, "jobs", "requeue", "--queue", "emails", "--error-kind", "SMTPDown", answer="y\n"
    ).endswith("3\n")
    assert statuses(server) == ["queued"] * 4


def test_cancel_and_delete_by_id_with_yes(server: str) -> None:
    with Client(server) as api:
        first, second = (j["id"] for j in api.jobs("emails", limit=2)["jobs"])
    done = json.loads(
        run(server, "jobs", "cancel", "--id", str(first), "--id", str(second), "--yes", "--json")
    )
    assert done["done"] == 2 and done["operation"]
    assert run(server, "jobs", "delete", "--status", "cancelled", "--queue", "emails", "--yes").strip() == "2"
    assert len(statuses(server)) == 2


def test_the_clients_errors_come_from_the_top() -> None:
    from jobledger import Conflict, NotFound
    from jobledger.client import errors

    assert NotFound is errors.NotFound and Conflict is errors.Conflict
