"""An async client's commands: packed by hiredis into the very bytes redis-py packs; a command the
transport takes whole is written in its caller's task, with no task or timer of its own; a write
that may wait (larger than the transport's high-water mark) is still bounded by the socket
timeout."""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Coroutine, Generator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio.connection

from jobledger.ledger.redis_clients import LeanConnection, async_client, sync_client
from tests.support.private_redis import PrivateServer


def _counting_tasks(loop: asyncio.AbstractEventLoop, made: list[str]) -> None:
    def factory(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any]
    ) -> asyncio.Task[Any]:
        made.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop)  # type: ignore[arg-type]

    loop.set_task_factory(factory)  # type: ignore[arg-type]


ARGUMENTS: list[tuple[Any, ...]] = [
    ("EVALSHA", "f" * 40, 1, "{ns}:", 1_700_000_000_123, "local", "q", 1, "w-1", 12, "completed", ""),
    ("SET", "k", 1.5, 0.1, 1e20, -0.0, float("inf"), 2**70, -3),
    ("SET", "k", "héllo ✓", b"\x00\xff", memoryview(b"abc"), bytearray(b"xy"), "x" * 100_000),
    ("CONFIG GET", "maxmemory"),
]


@pytest.mark.parametrize("args", ARGUMENTS)
def test_a_command_is_packed_into_the_bytes_redis_py_packs(args: tuple[Any, ...]) -> None:
    ours = async_client("redis://127.0.0.1:1").connection_pool.make_connection()
    assert isinstance(ours, LeanConnection)
    theirs = redis.asyncio.connection.Connection()
    assert _packed(ours, args) == _packed(theirs, args)


def _packed(connection: Any, args: tuple[Any, ...]) -> bytes | str:
    """The bytes a connection packs, or how it refused them (some redis-py versions refuse a
    bytearray, which others take)."""
    try:
        return b"".join(connection.pack_command(*args))
    except redis.DataError as refused:
        return f"refused: {refused}"


def test_what_cannot_be_packed_is_refused_as_redis_py_refuses_it() -> None:
    ours = async_client("redis://127.0.0.1:1").connection_pool.make_connection()
    for wrong in (True, None, [1]):
        with pytest.raises(redis.DataError):
            ours.pack_command("SET", "k", wrong)


def test_another_encoding_is_packed_by_redis_py() -> None:
    ours = async_client("redis://127.0.0.1:1", encoding="latin-1").connection_pool.make_connection()
    assert ours.pack_command("SET", "k", "é") == redis.asyncio.connection.Connection(
        encoding="latin-1"
    ).pack_command("SET", "k", "é")


def test_a_short_command_is_written_without_a_task_and_a_long_one_as_redis_py_does(
    redis_url: str, namespace: str
) -> None:
    async def scenario() -> list[str]:
        client = async_client(redis_url, namespace, socket_timeout=5.0)
        try:
            await client.ping()  # connected
            made: list[str] = []
            _counting_tasks(asyncio.get_running_loop(), made)
            key = f"{{{namespace}}}:written"
            await client.set(key, "short")
            assert await client.get(key) == b"short"
            short_made = list(made)
            long = b"x" * 1_000_000  # more than any transport's high-water mark
            await client.set(key, long)
            assert await client.get(key) == long
            try:  # redis-py 5 names the command; later versions take none
                connection = await client.connection_pool.get_connection()
            except TypeError:
                connection = await client.connection_pool.get_connection("GET")  # type: ignore[call-arg]
            assert connection.socket_timeout == 5.0  # lifted for the write only
            await client.connection_pool.release(connection)
            await client.delete(key)
            return short_made
        finally:
            await client.aclose()

    assert asyncio.run(scenario()) == []


def test_a_write_that_waits_on_a_stalled_redis_times_out_and_never_runs(tmp_path: Path) -> None:
    """The write times out while Redis is paused; what it had not sent is thrown away with its
    connection, so once Redis reads again the command reported as failed does not run after all."""
    private = PrivateServer(tmp_path / "valkey")
    private.start()
    try:

        async def scenario() -> None:
            client = async_client(private.url, "stalled", socket_timeout=0.5)
            try:
                await client.ping()
                private.pause()
                with pytest.raises(redis.TimeoutError):
                    # larger than the socket buffers: the write itself has to wait
                    await asyncio.wait_for(client.set("{stalled}:big", b"x" * 64_000_000), 30)
            finally:
                private.resume()
            await asyncio.sleep(1.0)  # time for anything still buffered to reach Redis and run
            assert await client.exists("{stalled}:big") == 0
            await client.aclose()

        asyncio.run(scenario())
    finally:
        private.kill()


def test_a_connection_reports_redis_py_s_version_without_reading_package_metadata(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", unreadable)  # redis-py 8 reads it per connection
    client = sync_client(redis_url)
    try:
        client.ping()
        ours = [c for c in client.client_list() if c.get("id") == str(client.client_id())]
    finally:
        client.close()
    if not ours or "lib-ver" not in ours[0]:
        pytest.skip("this server does not keep a client's library version (CLIENT SETINFO)")
    assert ours[0]["lib-ver"] == redis.__version__
