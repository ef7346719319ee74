"""Folding a ledger's stream on the server: what it applies is what the client path applies, and it
hands the client what only the client can apply (events at an older version of their type)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay import rebuild as rebuild_module
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import Applier, rebuild
from jobledger.replay.verify import drop_namespace
from tests.support.ledger import create, fetch, put_queue
from tests.support.replay import workload


@pytest.fixture
def targets(client: redis.Redis, namespace: str) -> Iterator[Callable[[str], str]]:
    """Names of namespaces to rebuild into, removed after the test."""
    made: list[str] = []

    def target(name: str) -> str:
        made.append(f"{namespace}-{name}")
        return made[-1]

    yield target
    for name in made:
        drop_namespace(client, name)


def test_a_ledger_of_current_events_is_folded_without_the_client_path(
    client: redis.Redis, ledger: Ledger, namespace: str, targets: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    workload(ledger)
    events = int(client.xlen(Keys(namespace).events))

    def client_path(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an event of the current version went through the client")

    monkeypatch.setattr(Applier, "apply", client_path)
    target = targets("server")
    assert rebuild(client, namespace, target, batch=7) == events
    assert compare(client, namespace, target) == []


def test_an_older_event_goes_through_the_client_and_the_fold_goes_on(
    client: redis.Redis, ledger: Ledger, namespace: str, targets: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    workload(ledger)
    put_queue(ledger, "hb", heartbeat_timeout="10s", retries=1, retry_delays=["30s"])
    job_id = create(ledger, "hb")
    fetch(ledger, "hb")
    # the job_timed_out its first version wrote (the cause in data.reason), between current events
    data = {"reason": "heartbeat", "ended": False, "retry_at": 4_102_444_800_000}
    fields = {"type": "job_timed_out", "v": "1", "at": "1",
              "job": str(job_id), "queue": "hb", "data": json.dumps(data, separators=(",", ":"))}  # fmt: skip
    client.xadd(Keys(namespace).events, fields)  # type: ignore[arg-type]
    workload(ledger, jobs=6)
    both = targets("both")
    total = rebuild(client, namespace, both, batch=5)
    assert total == client.xlen(Keys(namespace).events)
    monkeypatch.setattr(Applier, "fold_stream", lambda *args, **kwargs: None)
    client_only = targets("client")
    assert rebuild(client, namespace, client_only, batch=5) == total
    assert compare(client, client_only, both) == []
    assert client.hget(Keys(both).job(job_id), "status") == b"timed_out"


def test_a_server_that_refuses_two_namespaces_in_one_script_gets_the_client_path(
    client: redis.Redis, ledger: Ledger, namespace: str, targets: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    workload(ledger)

    class Refusing:
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise redis.ResponseError("CROSSSLOT Keys in request don't hash to the same slot")

    original = Applier.__init__

    def init(self: Applier, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.stream_script = Refusing()  # type: ignore[assignment]

    monkeypatch.setattr(rebuild_module.Applier, "__init__", init)
    target = targets("refused")
    assert rebuild(client, namespace, target) == client.xlen(Keys(namespace).events)
    assert compare(client, namespace, target) == []
