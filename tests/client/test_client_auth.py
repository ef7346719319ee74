"""The client and the worker against a server with auth on: a token given as ``token=`` or
``$JOBLEDGER_TOKEN`` goes as a bearer header; without one, Unauthorized; out of scope, Forbidden."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobledger.client import Client, Forbidden, Unauthorized
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from jobledger.worker.worker import JobContext, Worker
from tests.support.live_server import live_server
from tests.worker.worker_support import working


@pytest.fixture
def server(redis_url: str, namespace: str) -> Iterator[str]:
    with live_server(redis_url, namespace, auth=True) as url:
        yield url


def token(ledger: Ledger, name: str, *scopes: str) -> str:
    secret = new_secret()
    ledger.run(create_token(name, list(scopes), digest(secret)))
    return secret


def test_token_argument_and_environment(server: str, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBLEDGER_TOKEN", raising=False)
    admin = token(ledger, "admin", "admin")
    with Client(server) as anonymous, pytest.raises(Unauthorized):
        anonymous.queues()
    with Client(server, token=admin) as client:
        assert client.put_queue("q")
    reader = token(ledger, "reader", "read")
    monkeypatch.setenv("JOBLEDGER_TOKEN", reader)
    with Client(server) as client:
        assert client.queues() == ["q"]
        with pytest.raises(Forbidden) as refused:
            client.submit("q", {"n": 1})
        assert reader not in str(refused.value)


def test_worker_with_a_work_token(server: str, ledger: Ledger) -> None:
    admin, producer = token(ledger, "admin", "admin"), token(ledger, "producer", "produce:q")
    work = token(ledger, "worker", "work:q")

    async def double(job: JobContext) -> int:
        return int(job.input) * 2

    with Client(server, token=admin) as client:
        client.put_queue("q")
    with Client(server, token=producer) as client:
        ids = [client.submit("q", n) for n in range(3)]
        with working(Worker(double, "q", url=server, token=work)):
            jobs = [client.wait(i, timeout=15) for i in ids]
    assert [(j.status, j.output) for j in jobs] == [("completed", n * 2) for n in range(3)]
