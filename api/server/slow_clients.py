"""Clients too slow to be worth a connection are cut off, at the protocol, before any app code runs.

uvicorn's h11 protocol (the one ``serve`` runs) closes a connection idle between requests after
``timeout_keep_alive``, but waits for ever for a request's headers, and for its body: a client that
sends one byte now and then holds a connection, and a task, as long as it likes.  Here:

- a request's line and headers must be complete within ``header_timeout`` of their first byte (or
  of the connection's opening, or of the previous response), else the connection is closed: with
  408 when part of a request had come, silently when none had (an idle connection, which a client
  may be reusing at that very moment and must not read a 408 as its answer);
- a request's body must keep up with ``min_body_rate`` bytes per second on average, counted after
  a grace of ``header_timeout`` from its headers, else the connection is closed.  Time the server
  itself spends not reading (its app has not asked for more yet) is not held against the client.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("jobledger.serve")

TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class SlowClients(H11Protocol):
    """uvicorn's h11 protocol with the cut-offs of the module; :meth:`configured` sets them."""

    header_timeout: float = 10.0
    min_body_rate: float = 1024.0

    @classmethod
    def configured(cls, header_timeout: float, min_body_rate: float) -> type[SlowClients]:
        return type(cls.__name__, (cls,), {"header_timeout": header_timeout, "min_body_rate": min_body_rate})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._headers_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_start = 0.0
        self._body_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop(body=True)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        body = self.conn.their_state is h11.SEND_BODY
        super().data_received(data)
        if body and self.conn.their_state is h11.SEND_BODY:
            self._body_bytes += len(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _stop(self, *, body: bool = False) -> None:
        if self._headers_timer is not None:
            self._headers_timer.cancel()
            self._headers_timer = None
        if body and self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _watch(self) -> None:
        """Arm the timer the request's state calls for: its headers', its body's, or none."""
        if self.transport.is_closing():
            self._stop(body=True)
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._headers_timer is None and (self.cycle is None or self.cycle.response_complete):
                self._headers_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)
            return
        self._stop()
        if state is h11.SEND_BODY:
            if self._body_timer is None:
                self._body_start, self._body_bytes = self.loop.time(), 0
            self._arm_body()
        elif self._body_timer is not None:
            self._stop(body=True)

    def _arm_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
        due = self._body_start + self.header_timeout + self._body_bytes / self.min_body_rate
        self._body_timer = self.loop.call_at(max(due, self.loop.time() + 0.05), self._body_too_slow)

    def _headers_too_slow(self) -> None:
        self._headers_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.warning("closed a connection whose request headers took over %gs", self.header_timeout)
            if self.conn.trailing_data[0]:  # part of a request came: say why it is cut off
                self.transport.write(TIMED_OUT)
            self.transport.close()

    def _body_too_slow(self) -> None:
        self._body_timer = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        if self.flow.read_paused:  # the server is not reading: the wait is not the client's
            self._body_start += 1.0
            self._body_timer = self.loop.call_later(1.0, self._body_too_slow)
            return
        if self.loop.time() < self._body_start + self.header_timeout + self._body_bytes / self.min_body_rate:
            self._arm_body()
            return
        log.warning("closed a connection whose request body came slower than %g bytes/s", self.min_body_rate)
        self.transport.close()
