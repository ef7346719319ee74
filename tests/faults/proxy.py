"""A TCP proxy between Redis clients and Valkey that can lose answers: armed with :meth:`drop`, it
forwards the next scripted commands (FCALL / EVALSHA / EVAL) to Valkey as usual, and when Valkey answers,
closes the client's connection instead of passing the answer on.  The command took effect; its
client only knows that the connection broke.  Each answer lost is recorded (:attr:`DropProxy.drops`):
when, and the command it answered.  Runs an asyncio loop in a thread of its own."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

from tests.faults.checks import Drop
from tests.support.private_redis import free_port

CHUNK = 65536
#: What a request carrying a command (a function) or a script starts with, as redis-py writes it
#: (RESP bulk strings).
SCRIPTED = (b"$5\r\nFCALL\r\n", b"$7\r\nEVALSHA\r\n", b"$4\r\nEVAL\r\n")
#: How many of a dropped command's arguments are recorded, and how much of each.
ARGS, ARG_CHARS = 16, 60


def arguments(request: bytes) -> tuple[str, ...]:
    """The first arguments of the scripted command in ``request`` (RESP: ``*n``, then ``$len`` and
    the bytes of each argument), each cut short; JSON arguments carry no bare CR LF."""
    lines = request.split(b"\r\n")
    start = next(
        (i for i, line in enumerate(lines) if line.upper() in (b"FCALL", b"EVALSHA", b"EVAL")), len(lines)
    )
    out = []
    for line in lines[start:]:
        if not line.startswith(b"$") and not line.startswith(b"*"):
            out.append(line[:ARG_CHARS].decode(errors="replace"))
        if len(out) >= ARGS:
            break
    return tuple(out)


class DropProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.drops: list[Drop] = []
        self._armed = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drop-proxy", daemon=True)
        self._server: asyncio.AbstractServer | None = None

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")

    def stop(self) -> None:
        """Close every connection and the listening socket, then end the loop and its thread."""
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        while True:
            # a connection accepted just before the close gets its handler a moment later: wait for
            # it, so that every handler runs its own closing, until none is left
            await asyncio.sleep(0.05)
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if not others:
                return
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

    @property
    def dropped(self) -> int:
        return len(self.drops)

    def drop(self, count: int) -> None:
        """Lose the answers to the next ``count`` scripted commands."""
        with self._lock:
            self._armed += count

    def _take(self) -> bool:
        with self._lock:
            if self._armed <= 0:
                return False
            self._armed -= 1
            return True

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def serve() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
            self._ready.set()

        self._loop.run_until_complete(serve())
        self._loop.run_forever()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except BaseException as exc:  # Valkey away, or the proxy closing meanwhile
            client_w.close()
            if isinstance(exc, OSError):
                return
            raise
        losing = asyncio.Event()
        lost: list[tuple[float, bytes]] = []  # when the command whose answer is lost went on, and it

        async def requests() -> None:
            while data := await client_r.read(CHUNK):
                if any(s in data.upper() for s in SCRIPTED) and self._take():
                    lost.append((time.time(), data))
                    losing.set()
                up_w.write(data)
                await up_w.drain()

        async def answers() -> None:
            while data := await up_r.read(CHUNK):
                if losing.is_set():
                    sent, request = lost[0]
                    self.drops.append(Drop(time.time(), sent, arguments(request)))
                    return
                client_w.write(data)
                await client_w.drain()

        tasks = [asyncio.ensure_future(requests()), asyncio.ensure_future(answers())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the proxy is closing: end quietly, after closing what this connection opened
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for writer in (client_w, up_w):
                writer.close()
            for writer in (client_w, up_w):
                with contextlib.suppress(OSError, asyncio.CancelledError):
                    await writer.wait_closed()
