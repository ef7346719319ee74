"""Tokens in the ledger: created and revoked by events holding the digest (never the secret), looked
up by digest, replayed like everything else."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from jobledger.ledger import errors
from jobledger.ledger.events import decode_entry
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import (
    ScopeError,
    Token,
    check_scope,
    create_token,
    digest,
    new_secret,
    revoke_token,
)
from jobledger.projections.tokens import token, tokens


def test_create_look_up_and_revoke(ledger: Ledger, client: redis.Redis) -> None:
    secret = new_secret()
    assert ledger.run(create_token("ci", ["produce:build-*", "read"], digest(secret)))
    found, _ = ledger.read(token(digest(secret)))
    assert found == Token("ci", ("produce:build-*", "read"), digest(secret))
    assert [t.name for t in ledger.read(tokens())] == ["ci"]
    entries: Any = client.xrange(ledger.keys.events)
    assert secret.encode() not in b"".join(v for _, f in entries for v in f.values())
    event = decode_entry(*entries[-1])
    assert event.type == "token_created" and event.queue is None and event.job is None

    assert ledger.run(revoke_token("ci"))
    assert ledger.read(token(digest(secret))) == (None, None)
    assert ledger.read(tokens()) == []
    last: Any = client.xrange(ledger.keys.events)[-1]  # type: ignore[index]
    assert decode_entry(*last).type == "token_revoked"


def test_name_taken_and_unknown_revoke_are_refused(ledger: Ledger) -> None:
    ledger.run(create_token("a", ["admin"], digest(new_secret())))
    with pytest.raises(errors.Conflict):
        ledger.run(create_token("a", ["read"], digest(new_secret())))
    with pytest.raises(errors.NotFound):
        ledger.run(revoke_token("b"))
    ledger.run(revoke_token("a"))
    ledger.run(create_token("a", ["read"], digest(new_secret())))  # the name is free again


@pytest.mark.parametrize("name", ["local", "scheduler", "Scheduler", "LOCAL"])
def test_names_of_tokenless_actors_are_refused(ledger: Ledger, client: redis.Redis, name: str) -> None:
    with pytest.raises(ScopeError, match="reserved"):
        ledger.run(create_token(name, ["admin"], digest(new_secret())))
    assert client.xlen(ledger.keys.events) == 0


def test_token_with_a_job_queue_in_one_read(ledger: Ledger) -> None:
    secret = new_secret()
    ledger.run(create_token("w", ["work:q"], digest(secret)))
    assert ledger.read(token(digest(secret), 999)) == (Token("w", ("work:q",), digest(secret)), None)


@pytest.mark.parametrize("scope", ["admin", "read", "produce:*", "work:emails", "work:build-[ab]?"])
def test_scopes_accepted(scope: str) -> None:
    assert check_scope(scope) == scope


@pytest.mark.parametrize("scope", ["", "root", "produce", "produce:", "work:a b", "read:x", "admin:*"])
def test_scopes_refused(scope: str) -> None:
    with pytest.raises(ScopeError):
        check_scope(scope)


def test_grants() -> None:
    t = Token("t", ("produce:build-*", "work:mail"), "d")
    assert t.grants("produce", "build-1") and not t.grants("produce", "mail")
    assert t.grants("work", "mail") and not t.grants("work", "build-1")
    assert not t.grants("read") and not t.grants("admin")
    assert t.on_queue("build-1") and t.on_queue("mail") and not t.on_queue("other")
    admin = Token("a", ("admin",), "d")
    assert all(admin.grants(k, "x") for k in ("admin", "read", "produce", "work"))
    reader = Token("r", ("read",), "d")
    assert reader.on_queue("x") and not reader.grants("work", "x")
