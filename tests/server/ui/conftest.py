"""Fixtures of the dashboard's tests: the app with auth off, and with auth on and a token per role."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from tests.support.http import app_client, put_queue

#: name -> scopes of the tokens of the secured app.
ROLES = {"admin": ["admin"], "reader": ["read"], "worker": ["read", "work:q"], "producer": ["produce:q"],
         "stranger": ["produce:other"]}  # fmt: skip


@pytest.fixture
def ui(redis_url: str, namespace: str) -> Iterator[TestClient]:
    """The app with auth off and queue ``q``."""
    with app_client(redis_url, namespace) as client:
        put_queue(client, "q")
        yield client


class Secured:
    """The app with auth on, queue ``q``, and a secret per role of :data:`ROLES`."""

    def __init__(self, client: TestClient, ledger: Ledger) -> None:
        self.client = client
        self.secrets = {}
        for name, scopes in ROLES.items():
            secret = new_secret()
            ledger.run(create_token(name, scopes, digest(secret)))
            self.secrets[name] = secret
        self.bearer = {"authorization": f"Bearer {self.secrets['admin']}"}
        assert client.put("/queue/q", json={}, headers=self.bearer).status_code == 201

    def sign_in(self, role: str) -> None:
        response = self.client.post("/ui/signin", data={"token": self.secrets[role]}, follow_redirects=False)
        assert response.status_code == 303, response.text

    def create_job(self, **body: object) -> int:
        response = self.client.post("/queue/q/job", json=body, headers=self.bearer)
        assert response.status_code == 201, response.text
        job_id: int = response.json()
        return job_id


@pytest.fixture
def secured(redis_url: str, namespace: str, ledger: Ledger) -> Iterator[Secured]:
    with app_client(redis_url, namespace, auth=True) as client:
        yield Secured(client, ledger)
