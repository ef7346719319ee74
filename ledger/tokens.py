"""API tokens: their secrets, digests and scopes.

A token is a name, the scopes it grants and a secret.  The ledger records the SHA-256 of the secret
(:func:`digest`), never the secret: ``token_created`` holds the name, the scopes and the digest, and
its applier writes the lookup ``token:{digest}`` that a request's secret is found by.

Scopes: ``admin`` (everything), ``read`` (every read), ``produce:GLOB`` (create jobs on the queues
the glob matches, and read them), ``work:GLOB`` (fetch, heartbeat, set the output of and update the
jobs of the queues it matches, and read them).  A glob is matched as :func:`fnmatch.fnmatchcase`
matches: ``*`` any run of characters, ``?`` one, ``[...]`` a set.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from jobledger.ledger.actors import LOCAL, SCHEDULER
from jobledger.ledger.calls import Call
from jobledger.ledger.partitions import HOME

#: What every secret starts with, so a leaked one is easy to recognise (and to scan for).
SECRET_PREFIX = "jl_"
#: The scopes that take no glob, and those that take one (``kind:GLOB``).
PLAIN_SCOPES = ("admin", "read")
QUEUE_SCOPES = ("produce", "work")

#: How many scopes one token may hold.
MAX_SCOPES = 100

_NAME = re.compile(r"^[A-Za-z0-9_.\-@]{1,128}$")
#: Names that are actors of their own (what runs without a token), in any case: a token so named
#: would make its events read, in history and audits, as the scheduler's or as local ones.
RESERVED_NAMES = frozenset({LOCAL, SCHEDULER})
_GLOB = re.compile(r"^[A-Za-z0-9_.\-*?\[\]!]{1,255}$")


class ScopeError(ValueError):
    """A token name or scope that is not one."""


def new_secret() -> str:
    """A fresh secret: 256 random bits, URL-safe."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """The SHA-256 (hex) of a secret: what the ledger keeps, and what a request is looked up by."""
    return hashlib.sha256(secret.encode()).hexdigest()


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ScopeError(f"{name!r} is not a token name (1-128 of A-Z a-z 0-9 _ - . @)")
    if name.lower() in RESERVED_NAMES:
        raise ScopeError(f"{name!r} is reserved: events without a token are recorded under that name")
    return name


def check_scope(scope: str) -> str:
    """``scope`` if it is one (see the module), else :class:`ScopeError` saying what is allowed."""
    if scope in PLAIN_SCOPES:
        return scope
    kind, sep, glob = scope.partition(":")
    if sep and kind in QUEUE_SCOPES and _GLOB.match(glob):
        return scope
    raise ScopeError(f"{scope!r} is not a scope (admin, read, produce:GLOB or work:GLOB)")


@dataclass(frozen=True)
class Token:
    """A live token as the lookup holds it."""

    name: str
    scopes: tuple[str, ...]
    digest: str

    @property
    def admin(self) -> bool:
        return "admin" in self.scopes

    def grants(self, kind: str, queue: str | None = None) -> bool:
        """Whether the token may do ``kind`` (``admin``, ``read``, ``produce``, ``work``) on ``queue``.
        ``admin`` grants everything; a queue scope grants its kind on the queues its glob matches."""
        if "admin" in self.scopes or (kind in PLAIN_SCOPES and kind in self.scopes):
            return True
        if kind not in QUEUE_SCOPES or queue is None:
            return False
        prefix = kind + ":"
        return any(s.startswith(prefix) and fnmatchcase(queue, s[len(prefix) :]) for s in self.scopes)

    def on_queue(self, queue: str | None) -> bool:
        """Whether the token may read what belongs to ``queue``: ``read``, or any queue scope on it."""
        return self.grants("read") or any(self.grants(kind, queue) for kind in QUEUE_SCOPES)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def token_of(fields: dict[Any, Any] | None) -> Token | None:
    """A ``token:{digest}`` hash (HGETALL's reply) as a :class:`Token`; None when empty."""
    if not fields:
        return None
    f = {_s(k): _s(v) for k, v in fields.items()}
    return Token(f["name"], tuple(json.loads(f["scopes"])), f["digest"])


def create_token(name: str, scopes: list[str], secret_digest: str) -> Call[bool]:
    """Record a new token (``token_created``); refused (Conflict) when the name is taken."""
    check_name(name)
    if not scopes:
        raise ScopeError("a token needs at least one scope")
    if len(scopes) > MAX_SCOPES:
        raise ScopeError(f"a token holds at most {MAX_SCOPES} scopes")
    scopes = list(dict.fromkeys(check_scope(s) for s in scopes))
    data = json.dumps({"name": name, "scopes": scopes, "digest": secret_digest}, separators=(",", ":"))
    return Call("create_token", (name, secret_digest, data), lambda r: int(r) == 1, HOME)


def revoke_token(name: str) -> Call[bool]:
    """Revoke a live token (``token_revoked``); refused (NotFound) when there is none of that name."""
    return Call("revoke_token", (name,), lambda r: int(r) == 1, HOME)
