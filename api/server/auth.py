"""Who may call what: the bearer token check, and the scope each route needs.

With ``[server] auth`` on, every route but ``GET /health`` and ``GET /ready`` wants
``Authorization: Bearer SECRET``.  The secret's SHA-256 is looked up in the token projection
(``token:{digest}``, see :mod:`jobledger.ledger.tokens`); a route on a job reads the job's queue
with it (at once, in its partition).  A token's name and scopes never change, so a server keeps the
tokens it has looked up (:class:`KnownTokens`) and, on a route whose first effect is a command or a
read, takes a known one without a lookup: that command or read checks, in its own script or MULTI,
that the ledger still knows the token (no round trip more).  Either way a revoked token stops
working at once on every server of the ledger.  Likewise a job's queue never changes: the queues of
the jobs a server creates, hands out or looks up are kept (:class:`KnownJobs`), so a worker's
completion of a job its fetch brought checks the scope without reading the job.

No token, or one the ledger does not know: 401 with ``WWW-Authenticate``.  A token whose scopes do
not cover the route: 403.  Both are JSON errors, nothing is appended, and neither names the secret.
A request that passes runs its commands as the token's name
(:meth:`jobledger.ledger.runner.OpeningLedger.as_actor`).

A request that goes on (a live feed, a long-poll) ends when its token is revoked:
:func:`revocation` follows the token's ``token_revoked`` through the process's
:class:`jobledger.ledger.watch.LedgerWatch` and checks the ledger at each wake-up.

The scope each route needs is its record's (:data:`jobledger.server.routes.ROUTES`);
docs/http-api.md shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger.errors import BadRequest, JobLedgerError
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.tokens import Token, digest
from jobledger.ledger.watch import LedgerWatch, Subscription, token_topic
from jobledger.projections import tokens
from jobledger.server.errors import REALM, error_response
from jobledger.server.inputs import valid_job_id

Endpoint = Callable[[Request], Awaitable[Response]]
Kind = Literal["open", "read", "produce", "work", "admin"]


@dataclass(frozen=True)
class Needs:
    """What a route needs.  ``kind``: ``open`` (nothing), ``admin``, ``read``, ``produce`` or
    ``work``.  ``on``: the queue the route acts on, ``queue`` (the path's), ``query`` (``?queue=``;
    none named: admin only), ``form`` (named in the body: the handler checks it with
    :func:`check_form_scope` once it has read it), ``body`` (the queues of the jobs the body names,
    and of the queue it fetches from: the handler checks them with :func:`check_jobs_scope` and
    :func:`check_form_scope`) or ``job`` (the job's).
    ``read`` on a queue is also granted by a ``produce`` or ``work`` scope that matches it."""

    kind: Kind
    on: Literal["queue", "query", "form", "body", "job", "events"] | None = None

    def describe(self) -> str:
        if self.on == "form":
            return f"{self.kind}:GLOB matching the queue the form names"
        if self.on == "body":
            return f"{self.kind}:GLOB matching the queue of each job the body names, and of its fetch"
        if self.on == "query":
            return f"{self.kind}:GLOB matching the queue of ?queue= (admin without one)"
        if self.kind in ("produce", "work"):
            return f"{self.kind}:GLOB matching the queue"
        if self.on == "events":
            return "read, or a queue or job filter on a queue its produce:/work: scopes match"
        if self.on:
            return "read, or produce:/work: on the queue"
        return self.kind

    def allows(self, token: Token, queue: str | None) -> bool:
        """Whether ``token`` may: with ``queue`` None, whatever the queue (its scope is not a
        queue's); else on that queue."""
        if self.kind == "open" or token.admin:
            return True
        if self.kind in ("admin", "read") and token.grants(self.kind):
            return True
        if queue is None or self.on is None:
            return False
        if self.kind == "read":
            return token.on_queue(queue)
        return token.grants(self.kind, queue)


OPEN, READ, ADMIN = Needs("open"), Needs("read"), Needs("admin")
READ_QUEUE, READ_JOB = Needs("read", "queue"), Needs("read", "job")
PRODUCE_QUEUE = Needs("produce", "queue")


def unauthorized(message: str, invalid: bool = False) -> JSONResponse:
    response = error_response(401, message)
    response.headers["WWW-Authenticate"] = REALM + (', error="invalid_token"' if invalid else "")
    return response


def bearer(request: Request) -> str | None:
    """The secret of ``Authorization: Bearer SECRET``; None without one."""
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    return secret if scheme.lower() == "bearer" and secret else None


def _job_of(request: Request, needs: Needs) -> int | None:
    """The job whose queue the check needs: the path's, or the events filter's (None: none)."""
    if needs.on == "job":
        return valid_job_id(request.path_params["job_id"])
    if needs.on == "events":
        return valid_job_id(request.query_params.get("job") or "")
    return None


def _named_queues(request: Request, needs: Needs) -> list[str]:
    """The queues the request itself names (its path's, or its query's)."""
    if needs.on == "queue":
        return [request.path_params["queue"]]
    if needs.on in ("query", "events"):
        named = request.query_params.get("queue")
        return [named] if named is not None else []
    return []


#: What a refusal says of a job's queue: never its name, so that a job on a queue the token does not
#: cover reads exactly as a job that does not exist.
_ON_A_JOB = " on a job that is on no queue it covers (or no such job)"


def _refusal(token: Token, needs: Needs, queues: list[str], jobs: bool = False) -> str:
    """Why ``token`` may not: on ``queues`` (ones the request named), or on the jobs it named."""
    where = " on queue " + ", ".join(f"'{q}'" for q in queues) if queues else (_ON_A_JOB if jobs else "")
    return f"token '{token.name}' may not do this{where}: it needs {needs.describe()}"


def _refused(
    request: Request, token: Token, needs: Needs, job: int | None, job_queue: str | None
) -> str | None:
    """Why the request is refused to ``token``, or None: each queue it acts on must be covered, the
    ones it names and the one of the job it names (None: no such job)."""
    named = _named_queues(request, needs)
    on_job = needs.on == "job" or (needs.on == "events" and job is not None)
    if not named and not on_job:
        return _refusal(token, needs, [])
    refused = [q for q in named if not needs.allows(token, q)]
    if refused:
        return _refusal(token, needs, refused)
    if on_job and (job_queue is None or not needs.allows(token, job_queue)):
        return _refusal(token, needs, [], jobs=True)
    return None


async def token_and_queue(
    ledger: OpeningLedger, presented: str, job: int | None
) -> tuple[Token | None, str | None]:
    """The live token whose secret has the digest ``presented``, and the queue of ``job`` (None: no
    job asked, or no such job): in one round trip when the job is in the home partition, where the
    tokens are (always, on a ledger of one partition); else each in its partition, at once."""
    router = await ledger.opened()
    if job is None or router.partitioning.of_id(job) == 0:
        return await router.read(tokens.token(presented, job))
    (token, _), queue = await asyncio.gather(
        router.read(tokens.token(presented)), router.read(tokens.job_queue(job))
    )
    return token, queue


#: How many tokens a server keeps known (their digests, names and scopes, which never change).
TOKENS_KEPT = 1024


class KnownTokens:
    """The tokens this server has looked up, by digest: a token's name and scopes never change, so
    a route whose first effect is a ledger command or read (``ApiRoute.checks_token``) takes a known
    token from here and leaves its revocation to that command or read, which checks in the same
    script or MULTI that the ledger still knows it (the runner's ``as_actor`` with a token).  So a
    revoked token still stops at once, and the lookup costs no round trip.  Only on a ledger of one
    partition: elsewhere the tokens live in another partition than the jobs."""

    def __init__(self, size: int = TOKENS_KEPT) -> None:
        self.size = size
        self._known: dict[str, Token] = {}

    def get(self, presented: str) -> Token | None:
        return self._known.get(presented)

    def keep(self, presented: str, token: Token) -> None:
        if len(self._known) >= self.size:
            self._known.clear()
        self._known[presented] = token


#: How many jobs' queues a server keeps known.
JOBS_KEPT = 65_536


class KnownJobs:
    """The queue of each job this server has handed out, created or looked up: a job's queue never
    changes and its id is never given to another, so a route on a job checks a known token's scope
    against it without reading it (the command or read that follows checks the token itself)."""

    def __init__(self, size: int = JOBS_KEPT) -> None:
        self.size = size
        self._queues: dict[int, str] = {}

    def get(self, job: int) -> str | None:
        return self._queues.get(job)

    def keep(self, queue: str, jobs: Iterable[int]) -> None:
        for job in jobs:
            if len(self._queues) >= self.size:
                self._queues.clear()
            self._queues[job] = queue


def remember_jobs(request: Request, queue: str, jobs: Iterable[int]) -> None:
    """Keep the queue of ``jobs`` (created on or handed out from ``queue``), when auth is on."""
    known: KnownJobs | None = getattr(request.state, "job_queues", None)
    if known is not None and getattr(request.state, "token_grants", None) is not None:
        known.keep(queue, jobs)


def _multipart(request: Request) -> bool:
    """A multipart body: its files are stored before any command runs."""
    return request.headers.get("content-type", "").lower().startswith("multipart/")


def guarded(needs: Needs, endpoint: Endpoint, checks_token: bool = False) -> Endpoint:
    """``endpoint`` behind the token check (see the module); itself for an open route.
    ``checks_token``: the endpoint's first effect is a ledger command or read, so a known token
    (:class:`KnownTokens`) needs no lookup of its own."""
    if needs.kind == "open":
        return endpoint

    async def guard(request: Request) -> Response:
        secret = bearer(request)
        if secret is None:
            return unauthorized("this server wants a token: send Authorization: Bearer <token>")
        presented = digest(secret)
        try:
            job, bad_id = _job_of(request, needs), None
        except BadRequest as exc:  # said only to a known token: a stranger learns nothing more
            job, bad_id = None, exc
        ledger: OpeningLedger = request.state.ledger
        known: KnownTokens = request.state.tokens
        jobs: KnownJobs = request.state.job_queues
        single = (await ledger.opened()).partitioning.count == 1
        token = known.get(presented) if checks_token and single and not _multipart(request) else None
        checked = presented if single else ""  # what the commands and reads check again
        if token is None:
            token, job_queue = await token_and_queue(ledger, presented, job)
            if token is None or not hmac.compare_digest(token.digest, presented):
                return unauthorized("unknown or revoked token", invalid=True)
            if single:
                known.keep(presented, token)
        elif job is not None and not needs.allows(token, None):  # the job's queue, read checking the token
            job_queue = jobs.get(job)
            if job_queue is None:
                job_queue = await ledger.as_actor(token.name, checked).read(tokens.job_queue(job))
        else:
            job_queue = None
        if job is not None and job_queue is not None:
            jobs.keep(job_queue, [job])
        if bad_id is not None:
            raise bad_id
        if needs.on in ("form", "body"):  # the queues are in the body: a token on no queue stops here
            if not (token.admin or any(s.startswith(needs.kind + ":") for s in token.scopes)):
                return error_response(403, _refusal(token, needs, []))
        elif not needs.allows(token, None):
            refusal = _refused(request, token, needs, job, job_queue)
            if refusal is not None:
                return error_response(403, refusal)
        request.state.ledger = ledger.as_actor(token.name, checked)
        request.state.token = token.name
        request.state.token_digest = presented
        request.state.token_grants = token
        request.state.needs = needs
        return await endpoint(request)

    return guard


class Forbidden(JobLedgerError):
    code = "FORBIDDEN"
    status = 403


def check_form_scope(request: Request, queue: str) -> None:
    """For a route whose queue the body names (``on="form"`` or ``"body"``): 403 unless the
    request's token may act on ``queue`` as its route needs (nothing to check with auth off)."""
    token: Token | None = getattr(request.state, "token_grants", None)
    if token is None:
        return
    needs: Needs = request.state.needs
    if not needs.allows(token, queue):
        raise Forbidden(_refusal(token, needs, [queue]))


async def check_jobs_scope(request: Request, jobs: Sequence[int]) -> None:
    """For a route whose jobs the body names: 403 unless the request's token may act, as its route
    needs, on the queue of each (a job that does not exist is on no queue it covers, as for a route
    on one job).  The queues are read in the jobs' partitions, one read per partition, at once; a
    token whose scope is not a queue's (admin) reads none.  A job's queue never changes, so the
    check holds for the commands that follow it."""
    token: Token | None = getattr(request.state, "token_grants", None)
    if token is None or not jobs:
        return
    needs: Needs = request.state.needs
    if needs.allows(token, None):
        return
    known: KnownJobs = request.state.job_queues
    named = list(dict.fromkeys(jobs))
    if any(q is not None and not needs.allows(token, q) for q in map(known.get, named)):
        raise Forbidden(_refusal(token, needs, [], jobs=True))
    unknown = [job for job in named if known.get(job) is None]
    if not unknown:
        return
    ledger: OpeningLedger = request.state.ledger
    router = await ledger.opened()
    by_partition: dict[int, list[int]] = {}
    for job in unknown:
        by_partition.setdefault(router.partitioning.of_id(job), []).append(job)
    parts = list(by_partition.values())
    found = await asyncio.gather(*(router.read(tokens.job_queues(tuple(ids))) for ids in parts))
    if any(q is None or not needs.allows(token, q) for queues in found for q in queues):
        raise Forbidden(_refusal(token, needs, [], jobs=True))
    for ids, queues in zip(parts, found, strict=True):
        for job, queue in zip(ids, queues, strict=True):
            known.keep(str(queue), [job])


class Revocation:
    """The revocation of a request's token, awaited: :meth:`wait` returns once the ledger no
    longer knows the token.  Each wake-up of the subscription is checked against the ledger (the
    watch also wakes everyone when it starts or cannot read), so only a real revocation counts."""

    def __init__(self, ledger: OpeningLedger, token_digest: str, sub: Subscription) -> None:
        self.ledger, self.digest, self.sub = ledger, token_digest, sub
        self.revoked = False

    async def wait(self) -> None:
        while True:
            await self.sub.woken.wait()
            self.sub.woken.clear()
            with contextlib.suppress(redis.RedisError, OSError, JobLedgerError):
                found, _ = await self.ledger.read(tokens.token(self.digest))
                if found is None:
                    self.revoked = True
                    return


@contextlib.contextmanager
def revocation(request: Request) -> Iterator[Revocation | None]:
    """Within: the :class:`Revocation` of the request's token (None: auth is off, or the route
    open).  Subscribed on entering, so a revocation from then on is seen."""
    token_digest: str | None = getattr(request.state, "token_digest", None)
    watch: LedgerWatch | None = getattr(request.state, "watch", None)
    if token_digest is None or watch is None:
        yield None
        return
    with watch.subscribe([token_topic(request.state.token)]) as sub:
        # its reads find the token gone rather than refuse for it (the request's ledger checks it)
        yield Revocation(request.state.ledger.as_actor(request.state.token), token_digest, sub)


def revoked_response() -> JSONResponse:
    """What a request whose token was revoked while it waited answers."""
    return unauthorized("the token was revoked", invalid=True)
