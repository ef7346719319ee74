"""Whether a request may name a stored blob by its SHA-256 in a job it creates.

With auth on, a token may name a blob only if it may read a queue that holds the blob
(:mod:`jobledger.blobs.holders`: a queue with a job whose file or result names it, or one it was
stored for with ``PUT /blob?queue=``), or with ``admin``.  A blob it may not name is answered
exactly as a blob the store does not hold (400, the same words), so the answer tells nothing about
other tenants' files.  With auth off every request is ``local`` and may name any stored blob.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request

from jobledger.blobs.holders import holders
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.tokens import Token

#: Whether a blob (by its SHA-256) may be named.
NameCheck = Callable[[str], Awaitable[bool]]


async def _anyone(sha256: str) -> bool:
    return True


def name_check(request: Request) -> NameCheck:
    """The check for this request's token (see the module)."""
    token: Token | None = getattr(request.state, "token_grants", None)
    if token is None or token.admin:
        return _anyone
    ledger: OpeningLedger = request.state.ledger
    reader = token

    async def may_name(sha256: str) -> bool:
        return any(reader.on_queue(queue) for queue in await ledger.read(holders(sha256)))

    return may_name
