"""After Redis restarts, the first command on every client jobledger builds succeeds: a pooled
connection the restart closed is never used again (jobledger sends each command once, so a command
written on a dead connection would fail, not be resent)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
import redis.asyncio

from jobledger.ledger import commands
from jobledger.ledger.partitioned import OpeningLedger, open_ledger
from jobledger.ledger.redis_clients import async_client, sync_client
from jobledger.ledger.requests import QueueSettings
from tests.support.private_redis import PrivateServer

POOLED = 3  # connections in the pool when Redis goes away


def _fill_sync_pool(client: redis.Redis) -> None:
    with ThreadPoolExecutor(POOLED) as threads:
        list(threads.map(lambda _: client.blpop(["{restart}:nothing"], 0.2), range(POOLED)))
    assert len(client.connection_pool._available_connections) == POOLED  # type: ignore[attr-defined]


async def _fill_async_pool(client: redis.asyncio.Redis) -> None:
    await asyncio.gather(*(client.blpop("{restart}:nothing", 0.1) for _ in range(POOLED)))
    assert len(client.connection_pool._available_connections) == POOLED


def _restart(private: PrivateServer) -> None:
    private.kill()
    private.start()


@pytest.mark.parametrize("namespace", [None, "restart"], ids=["plain", "routed"])
def test_a_sync_clients_first_command_after_a_restart_succeeds(
    private: PrivateServer, namespace: str | None
) -> None:
    client = sync_client(private.url, namespace)
    try:
        _fill_sync_pool(client)
        _restart(private)
        time.sleep(1)
        assert client.ping()
    finally:
        client.close()


def test_the_command_lines_ledger_runs_its_first_command_after_a_restart(private: PrivateServer) -> None:
    router = open_ledger(private.url, "restart")
    try:
        for runner in router.runners:
            _fill_sync_pool(runner.client)
        _restart(private)
        time.sleep(1)
        router.run(commands.put_queue("q", QueueSettings()))
    finally:
        for runner in router.runners:
            runner.client.close()


@pytest.mark.parametrize("namespace", [None, "restart"], ids=["plain", "routed"])
def test_an_async_clients_first_command_after_a_restart_succeeds(
    private: PrivateServer, namespace: str | None
) -> None:
    async def scenario() -> None:
        client = async_client(private.url, namespace)
        try:
            await _fill_async_pool(client)
            _restart(private)
            await asyncio.sleep(1)
            assert await client.ping()
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_the_servers_workers_and_schedulers_ledger_runs_its_first_command_after_a_restart(
    private: PrivateServer,
) -> None:
    """The server, the Worker over Redis and the scheduler all run their commands through an
    :class:`OpeningLedger`."""

    async def scenario() -> None:
        ledger = OpeningLedger(private.url, "restart")
        try:
            await ledger.run(commands.put_queue("q", QueueSettings()))
            for runner in (await ledger.opened()).runners:
                await _fill_async_pool(runner.client)
            _restart(private)
            await asyncio.sleep(1)
            await ledger.run(commands.put_queue("q", QueueSettings()))
        finally:
            await ledger.aclose()

    asyncio.run(scenario())
