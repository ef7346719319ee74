"""How many live feeds (``/events/stream`` and the dashboard's) a process serves at once: at most
``[server] max_feeds`` in all and ``[server] max_feeds_per_token`` for one token (``local`` with
auth off, so then for everyone).  One more is answered 429 with a JSON error and ``Retry-After``,
before anything is streamed; the feeds already open, and every other request, go on as before.

A feed holds its place while its answer is being sent (:class:`FeedResponse`), from the first byte
to the last, whatever ends it: its client hanging up, the server stopping, an ``event: error``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterable, Callable, Mapping

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from jobledger.server.errors import error_response

#: Seconds a client refused a feed is asked to wait before it tries again.
RETRY_AFTER = 5


#: Feeds of a process that read the stream by themselves at once (:mod:`jobledger.server.feed_reads`).
READS = 8


class FeedSlots:
    """The process's count of open feeds, in all and by token; ``reads`` limits the feeds that read
    the stream by themselves at once (:mod:`jobledger.server.feed_reads`).  ``counted`` is told the
    number open at each change (the ``jobledger_feeds_open`` gauge)."""

    def __init__(self, per_token: int, total: int, counted: Callable[[int], None] | None = None) -> None:
        self.per_token, self.total, self.counted = per_token, total, counted
        self.by_token: Counter[str] = Counter()
        self.open = 0
        self.reads = asyncio.Semaphore(READS)

    def refusal(self, token: str) -> str | None:
        """Why one more feed for ``token`` is refused (None: it is not)."""
        if self.open >= self.total:
            return (
                f"this server has {self.open} live feeds open, its most ([server] max_feeds); try again later"
            )
        if self.by_token[token] >= self.per_token:
            return (
                f"token '{token}' has {self.by_token[token]} live feeds open, its most "
                "([server] max_feeds_per_token): close one, or try again later"
            )
        return None

    def take(self, token: str) -> None:
        self.by_token[token] += 1
        self._moved(1)

    def give_back(self, token: str) -> None:
        self.by_token[token] -= 1
        if self.by_token[token] <= 0:
            del self.by_token[token]
        self._moved(-1)

    def _moved(self, by: int) -> None:
        self.open += by
        if self.counted is not None:
            self.counted(self.open)


class FeedResponse(StreamingResponse):
    """A live feed's answer: ``text/event-stream`` while the slots of ``token`` allow one more (its
    place held until the answer ends), else 429."""

    def __init__(
        self, content: AsyncIterable[str], slots: FeedSlots, token: str, headers: Mapping[str, str]
    ) -> None:
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self.slots, self.token = slots, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.slots.refusal(self.token)
        if refused is not None:
            closing = getattr(self.body_iterator, "aclose", None)
            if closing is not None:
                await closing()  # never started: nothing of it ran
            response = error_response(429, refused)
            response.headers["retry-after"] = str(RETRY_AFTER)
            await response(scope, receive, send)
            return
        self.slots.take(self.token)
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slots.give_back(self.token)
