"""Schemathesis against a live server, a few generated requests per documented operation: no answer
is a 500, and every answer's status, content type and body are ones ``/openapi.json`` documents.

Only the checks of answers run: the checks that generated bodies are accepted or refused exactly as
the schema says do not, as a JSON schema cannot say all a body's validation does (pytimeparse's
duration grammar, pydantic's strict integers refusing 1.0).  Generation is derandomized, so a run is
repeatable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import APIOperation, Case
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from jobledger.blobs import LocalBlobStore
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from tests.support.live_server import live_server

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 10
#: Endpoints that do not answer at once: the live event feed never ends.
SKIPPED = {"/events/stream"}


def _exercise(operation: APIOperation, base_url: str, headers: dict[str, str]) -> None:
    """EXAMPLES generated requests to ``operation``, each answer checked."""

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy())
    def check(case: Case) -> None:
        if case.query and "wait" in case.query:
            case.query["wait"] = "0.05"  # a long poll would only slow the run down
        case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=10, headers=headers)

    check()


@pytest.mark.parametrize(
    "scopes", [None, ["admin"], ["produce:q", "work:q"]], ids=["open", "admin", "scoped"]
)
def test_answers_conform_to_the_document(
    redis_url: str, namespace: str, ledger: Ledger, scopes: list[str] | None, tmp_path: Path
) -> None:
    """With auth on, the requests carry a token: an admin's, or one scoped to queue q (refused on
    most routes, and on every job of no queue it covers)."""
    headers: dict[str, str] = {}
    auth = scopes is not None
    if scopes is not None:
        secret = new_secret()
        ledger.run(create_token("fuzz", scopes, digest(secret)))
        headers = {"authorization": f"Bearer {secret}"}
    with live_server(redis_url, namespace, blobs=LocalBlobStore(tmp_path / "blobs"), auth=auth) as base_url:
        if scopes is not None and "admin" not in scopes:
            admin = new_secret()
            ledger.run(create_token("fuzz-admin", ["admin"], digest(admin)))
            headers_to_create = {"authorization": f"Bearer {admin}"}
        else:
            headers_to_create = headers
        assert httpx2.put(f"{base_url}/queue/q", json={}, headers=headers_to_create).status_code == 201
        doc: dict[str, Any] = httpx2.get(f"{base_url}/openapi.json", headers=headers_to_create).json()
        schema = schemathesis.openapi.from_dict(doc)
        operations = [result.ok() for result in schema.get_all_operations() if isinstance(result, Ok)]
        for operation in operations:
            if operation.path not in SKIPPED:
                _exercise(operation, base_url, headers)
    assert len(operations) == sum(len(item) for item in doc["paths"].values())  # none failed to load
