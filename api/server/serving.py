"""``jobledger serve``'s HTTP server: uvicorn, started and stopped as jobledger promises.

- The listening sockets are bound first (:func:`listen`), before the embedded server or the app
  starts, so a port in use ends the command at once with a message naming the address.
- The first SIGTERM or SIGINT stops taking new requests, gives those in flight ``shutdown_timeout``
  less a short reserve to finish, then shuts the app down (its scheduler, its Redis client); if
  anything still runs when ``shutdown_timeout`` has passed, it is cancelled.  A second signal
  cancels the requests in flight at once, and the app shuts down (within :data:`FORCED_STOP`).
  (uvicorn alone waits for the app's shutdown without limit, and cuts the wait short only on a
  second SIGINT, skipping the app's shutdown.)
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import ssl
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

from jobledger.ledger.tasks import cancel_and_wait
from jobledger.runtime.config import Config
from jobledger.server.slow_clients import SlowClients

log = logging.getLogger("jobledger.serve")

#: Seconds a forced stop waits for the cancelled tasks to end before closing the loop regardless.
FORCED_STOP = 2.0
#: The longest part of ``shutdown_timeout`` kept for shutting the app down after the requests.
SHUTDOWN_RESERVE = 1.0
BACKLOG = 2048


class ListenError(OSError):
    """The address cannot be listened on (in use, not an address of this machine...)."""


def address_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening TCP sockets on every address ``host`` names (as asyncio would bind them);
    :class:`ListenError`, naming the address, when one cannot be bound."""
    sockets: list[socket.socket] = []
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:  # the port the first address was given
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        reason = (exc.strerror or str(exc)).lower()
        raise ListenError(f"cannot listen on {address_text(host, port)}: {reason}") from exc
    return sockets


class GracefulServer(uvicorn.Server):
    """uvicorn's server with jobledger's stop (see the module): ``handle_exit`` is uvicorn's
    handler of SIGINT and SIGTERM, whichever way its version installs it."""

    def __init__(
        self,
        config: uvicorn.Config,
        shutdown_timeout: float,
        address: str,
        stopping: asyncio.Event | None,
        scheme: str = "http",
        listening: asyncio.Event | None = None,
    ) -> None:
        super().__init__(config)
        self.stopping = stopping  # set at the first signal: long-polls end at once
        self.listening = listening  # set once it listens: the app's warm-up starts
        self.shutdown_timeout = shutdown_timeout
        self.address = address
        self.scheme = scheme
        self.signals = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.main: asyncio.Task[None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.signals += 1
        self.should_exit = True
        if self.loop is not None:  # from a signal handler: only hand over to the loop
            self.loop.call_soon_threadsafe(self._signalled, sig, self.signals)

    def _signalled(self, sig: int, count: int) -> None:
        assert self.loop is not None
        name = signal.Signals(sig).name
        if count == 1:
            if self.stopping is not None:
                self.stopping.set()
            log.info("%s: stopping; requests in flight have up to %gs to finish (a second signal "
                     "stops at once)", name, self.shutdown_timeout)  # fmt: skip
            self.loop.call_later(self.shutdown_timeout, self._cancel_all, "shutdown_timeout has passed")
        elif count == 2:
            log.warning("%s again: cancelling %d requests in flight", name, len(self.server_state.tasks))
            for task in list(self.server_state.tasks):
                task.cancel()
            self.loop.call_later(FORCED_STOP, self._cancel_all, "the app did not shut down in time")

    def _cancel_all(self, why: str) -> None:
        if self.main is not None and not self.main.done():
            log.warning("stopping now: %s", why)
            self.main.cancel()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.listening is not None:
            self.listening.set()
        if self.started:
            log.info("listening on %s://%s (dashboard: /ui)", self.scheme, self.address)


def tls_problem(cert: Path, key: Path) -> str | None:
    """Why the certificate and key cannot serve HTTPS (unreadable, not PEM, not a pair), or None."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        return f"cannot serve HTTPS with {cert} and {key}: {exc.strerror or exc}"
    return None


def front_settings(config: Config) -> dict[str, Any]:
    """uvicorn's settings for what comes in: the h11 protocol with the slow-client cut-offs, and
    forwarded headers believed only from ``[server] forwarded_allow_ips`` (none by default, where
    uvicorn would believe every process of this machine)."""
    server = config.server
    forwarded = list(server.forwarded_allow_ips)
    return {
        "http": SlowClients.configured(server.header_timeout / 1000, server.min_body_rate),
        "proxy_headers": bool(forwarded),
        "forwarded_allow_ips": forwarded or [],
    }


def run_http(app: Any, config: Config, sockets: list[socket.socket]) -> bool:
    """Serve ``app`` on ``sockets`` until stopped (see the module); False if it never started."""
    timeout = config.server.shutdown_timeout / 1000
    graceful = max(0.0, timeout - min(SHUTDOWN_RESERVE, timeout / 5))
    uv_config = uvicorn.Config(
        app,
        host=config.server.host,
        port=config.server.port,
        lifespan="on",
        log_config=None,  # jobledger.runtime.logs has set logging up; uvicorn's loggers go through it
        log_level=config.server.log_level,
        # uvicorn declares an int, and passes it to asyncio.wait_for: any number of seconds works
        timeout_graceful_shutdown=graceful,  # type: ignore[arg-type]
        ssl_certfile=config.server.tls_cert,
        ssl_keyfile=config.server.tls_key,
        **front_settings(config),
    )
    port = sockets[0].getsockname()[1] if sockets else config.server.port
    stopping = getattr(getattr(app, "state", None), "stopping", None)
    listening = getattr(getattr(app, "state", None), "listening", None)
    scheme = "https" if config.server.tls_cert is not None else "http"
    server = GracefulServer(
        uv_config, timeout, address_text(config.server.host, port), stopping, scheme, listening
    )
    loop = asyncio.new_event_loop()
    server.loop = loop
    try:
        server.main = loop.create_task(server.serve(sockets=sockets))
        try:
            loop.run_until_complete(server.main)
        except asyncio.CancelledError:
            pass  # stopped at once, by a second signal or when shutdown_timeout passed
        except SystemExit:
            return False  # uvicorn's answer to an app that failed to start
        finally:
            _finish(loop)
    finally:
        loop.close()
    return server.started


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel whatever still runs on ``loop`` (after a stop at once), within :data:`FORCED_STOP`."""
    leftovers = [task for task in asyncio.all_tasks(loop) if not task.done()]
    if leftovers:
        still = loop.run_until_complete(cancel_and_wait(leftovers, timeout=FORCED_STOP))
        if still:
            log.warning("%d tasks did not stop within %gs; leaving them", len(still), FORCED_STOP)
    loop.run_until_complete(loop.shutdown_asyncgens())
