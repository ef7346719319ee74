"""When the client tries again: retries after transient failures.

Shared by the sync and async clients, which differ only in how they sleep.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import httpx2

from jobledger.client.calls import ApiCall

#: Failures where the request never reached the server: resending any request is harmless.
NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)


@dataclass(frozen=True)
class Retry:
    """Retry transient failures with capped exponential backoff and jitter.

    ``attempts`` counts every try (1 means no retry).  A failure to connect is retried for any
    request; a failure after the request may have been acted on (a lost answer, a timeout, or a 503
    from a server that lost Redis mid-command) only for a call marked ``safe``.  Creates are safe:
    each carries one Idempotency-Key over all its tries, so a resend never creates twice.
    """

    attempts: int = 4
    base: float = 0.1
    cap: float = 2.0

    def after_error(self, call: ApiCall[Any], exc: httpx2.TransportError, tried: int) -> float | None:
        """Seconds to wait before trying again after ``exc``; None to give up."""
        if not (isinstance(exc, NOT_SENT) or call.safe):
            return None
        return self.backoff(tried)

    def after_status(self, call: ApiCall[Any], status: int, tried: int) -> float | None:
        """Seconds to wait before trying again after an answer with ``status``; None to keep it."""
        if status != 503 or not call.safe:
            return None
        return self.backoff(tried)

    def backoff(self, tried: int) -> float | None:
        """Seconds to wait after the ``tried``-th try failed; None when every try is spent."""
        if tried >= self.attempts:
            return None
        ceiling = min(self.cap, self.base * 2 ** (tried - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)
