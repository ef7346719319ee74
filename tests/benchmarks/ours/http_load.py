"""A lean HTTP/1.1 load generator: keep-alive connections on asyncio streams, no client library.

Each connection runs job lifecycles one after another: ``POST /queue/Q/job`` (create), ``GET
/queue/Q/job`` (fetch: whichever job is next), ``PATCH /job/{id}`` with ``{"status": "completed",
"attempt": n}`` (complete the job fetched).  Three requests per job, the same against either app.
The client is kept as thin as it can be, so that the figure is the servers' cost, not its own.
With a ``token``, every request carries ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass


class HttpError(RuntimeError):
    """A response other than the one the lifecycle expects."""


@dataclass(frozen=True)
class LoadResult:
    jobs: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds


class Connection:
    """One keep-alive connection."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, token: str | None = None
    ) -> None:
        self.reader, self.writer = reader, writer
        self.headers = f"host: {host}\r\n" + (f"authorization: Bearer {token}\r\n" if token else "")

    @classmethod
    async def open(cls, host: str, port: int, token: str | None = None) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, f"{host}:{port}", token)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        head = f"{method} {path} HTTP/1.1\r\n{self.headers}"
        if body or method in ("POST", "PATCH", "PUT"):
            head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        for line in lines[1:]:
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        payload = await self.reader.readexactly(length) if length else b""
        return status, payload

    def close(self) -> None:
        self.writer.close()


async def lifecycle(conn: Connection, queue: str) -> None:
    """Create a job, fetch the next one, complete it: three requests."""
    status, _ = await conn.request("POST", f"/queue/{queue}/job", b"{}")
    if status != 201:
        raise HttpError(f"create answered {status}")
    status, body = await conn.request("GET", f"/queue/{queue}/job")
    if status != 200:
        raise HttpError(f"fetch answered {status}")
    job = json.loads(body)
    patch = b'{"status":"completed","attempt":%d}' % job["attempt"]
    status, _ = await conn.request("PATCH", f"/job/{job['id']}", patch)
    if status != 204:
        raise HttpError(f"complete answered {status}: job {job['id']}")


async def _run(
    host: str, port: int, queue: str, jobs: int, connections: int, warmup: int, token: str | None
) -> LoadResult:
    conns = [await Connection.open(host, port, token) for _ in range(connections)]
    try:
        left = [warmup]

        async def loop(conn: Connection) -> None:
            while left[0] > 0:
                left[0] -= 1
                await lifecycle(conn, queue)

        await asyncio.gather(*(loop(c) for c in conns))
        left[0] = jobs
        start = time.perf_counter()
        await asyncio.gather(*(loop(c) for c in conns))
        return LoadResult(jobs, time.perf_counter() - start)
    finally:
        for conn in conns:
            conn.close()


def run(
    host: str, port: int, queue: str, jobs: int, connections: int, warmup: int = 200, token: str | None = None
) -> LoadResult:
    """``jobs`` lifecycles over ``connections`` connections, after ``warmup`` untimed ones."""
    return asyncio.run(_run(host, port, queue, jobs, connections, warmup, token))
