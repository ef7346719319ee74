"""``jobledger replay drop NAMESPACE``: a rebuild's namespace deleted after a question, its keys
counted; the live namespace, its partitions and any namespace holding a ledger refused."""

from __future__ import annotations

import redis
from typer.testing import CliRunner, Result

from jobledger.cli.main import build_app
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.runner import Ledger
from tests.cli.test_cli_replay import PIPED, history, jobledger
from tests.support.ledger import create, put_queue

__all__ = ["history"]  # the fixture: a ledger of three jobs


def keys_of(client: redis.Redis, namespace: str) -> int:
    return sum(1 for _ in client.scan_iter(match=Keys(namespace).pattern()))


def drop(redis_url: str, namespace: str, *args: str, answer: str | None = None, code: int = 0) -> Result:
    result = CliRunner().invoke(
        build_app(), ["replay", "drop", *args, "--redis-url", redis_url, "--namespace", namespace],
        env=PIPED, input=answer,
    )  # fmt: skip
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result


def test_drop_asks_then_deletes_a_rebuild_s_namespace_and_counts_its_keys(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    view = namespace + "-view"
    jobledger(redis_url, namespace, "replay", "rebuild", "--into", view)
    held = keys_of(client, view)
    assert held > 0
    kept = drop(redis_url, namespace, view, answer="n\n", code=1)
    assert f"delete namespace '{view}': {held} keys?" in kept.stdout
    assert keys_of(client, view) == held  # not confirmed: nothing deleted
    dropped = drop(redis_url, namespace, view, answer="y\n")
    assert dropped.stdout.strip().endswith(f"dropped namespace '{view}': {held} keys deleted")
    assert keys_of(client, view) == 0
    assert keys_of(client, namespace) > 0  # the live ledger is untouched
    again = drop(redis_url, namespace, view, "--yes")
    assert again.stdout.strip() == f"namespace '{view}' holds no key: nothing to drop"


def test_drop_refuses_the_live_ledger_its_partitions_and_any_ledger(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    before = keys_of(client, namespace)
    refused = drop(redis_url, namespace, namespace, "--yes", code=2)
    assert "is the live ledger's namespace" in refused.stderr
    other = Ledger(client, namespace + "-other")  # another ledger: it holds events
    put_queue(other, "q")
    create(other, "q")
    refused = drop(redis_url, namespace, namespace + "-other", "--yes", code=3)
    assert "holds a ledger of 2 events, not a rebuild's view" in refused.stderr
    assert keys_of(client, namespace + "-other") > 0
    split = namespace + "-split"  # a live ledger stored as split: each partition is refused too
    client.set(Keys(split).build("partitions"), 4)
    part = Partitioning(split, 4).namespaces[2]
    refused = drop(redis_url, split, part, "--yes", code=2)
    assert f"is a partition of the live ledger '{split}'" in refused.stderr
    assert keys_of(client, namespace) == before
