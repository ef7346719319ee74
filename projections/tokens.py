"""Readers of the token projection: the lookup by digest, and the list of live tokens."""

from __future__ import annotations

from typing import Any

from jobledger.ledger.partitions import HOME, Route
from jobledger.ledger.reads import Read
from jobledger.ledger.tokens import Token, token_of


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def token(digest: str, job_id: int | None = None) -> Read[tuple[Token | None, str | None]]:
    """The live token whose secret has this digest (None: no such token), and with ``job_id`` the
    queue of that job (None: no such job), read together in one round trip."""

    def commands(k: Any) -> list[tuple[Any, ...]]:
        found: list[tuple[Any, ...]] = [("HGETALL", k.build("token", digest=digest))]
        if job_id is not None:
            found.append(("HGET", k.job(job_id), "queue"))
        return found

    def parse(r: list[Any]) -> tuple[Token | None, str | None]:
        queue = _s(r[1]) if job_id is not None and r[1] is not None else None
        return token_of(r[0]), queue

    return Read(commands, parse, HOME if job_id is None else Route(home=True, ids=(job_id,)))


def job_queue(job_id: int) -> Read[str | None]:
    """The queue of job ``job_id`` (None: no such job), read in the job's partition: what
    :func:`token` reads with the token when both live in one partition."""
    many = job_queues((job_id,))
    return Read(many.commands, lambda r: many.parse(r)[0], many.route)  # type: ignore[index]


def job_queues(job_ids: tuple[int, ...]) -> Read[list[str | None]]:
    """The queue of each job (None: no such job), in order; the jobs must share a partition."""
    return Read(
        lambda k: [("HGET", k.job(job_id), "queue") for job_id in job_ids],
        lambda r: [None if queue is None else _s(queue) for queue in r],
        Route(ids=job_ids),
    )


def tokens() -> Read[list[Token]]:
    """Every live token, by name."""

    def listed(r: list[Any]) -> Read[list[Token]] | list[Token]:
        digests = sorted((_s(n), _s(d)) for n, d in (r[0] or {}).items())
        if not digests:
            return []
        return Read(
            lambda k: [("HGETALL", k.build("token", digest=d)) for _, d in digests],
            lambda rr: [t for t in (token_of(f) for f in rr) if t is not None],
        )

    return Read(lambda k: [("HGETALL", k.build("tokens"))], listed, HOME)
