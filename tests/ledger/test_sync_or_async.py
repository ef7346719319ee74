"""Redis work written once runs alike on a sync and an async client: the replies, a failed call
caught where the work made it, calls made at once, and the mapping of what ends the work."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
import redis.asyncio

from jobledger.ledger.keys import Keys
from jobledger.ledger.redis_clients import async_client, sync_client
from jobledger.ledger.sync_or_async import AtOnce, Work, awaited, done


def _work(client: Any, key: str) -> Work[tuple[Any, ...]]:
    yield client.set(key, "1")
    both = yield AtOnce([client.incr(key), client.incr(key + ":other")])
    try:
        yield client.hget(key, "field")  # a string, not a hash: WRONGTYPE
    except redis.ResponseError as exc:
        caught = "WRONGTYPE" in str(exc)
    else:
        caught = False
    return tuple(both), caught, (yield client.get(key))


def _failing(client: Any, key: str) -> Work[None]:
    yield client.set(key, "1")
    yield client.hget(key, "field")


def test_the_same_work_on_a_sync_client(redis_url: str, namespace: str) -> None:
    client = sync_client(redis_url)
    try:
        assert done(_work(client, Keys(namespace).ledger_prefix + "k")) == ((2, 1), True, b"2")
    finally:
        client.close()


def test_the_same_work_on_an_async_client(redis_url: str, namespace: str) -> None:
    async def run() -> tuple[Any, ...]:
        client = async_client(redis_url)
        try:
            return await awaited(_work(client, Keys(namespace).ledger_prefix + "k"))
        finally:
            await client.aclose()

    assert asyncio.run(run()) == ((2, 1), True, b"2")


def test_what_ends_the_work_is_raised_as_mapped(redis_url: str, namespace: str) -> None:
    def mapped(exc: Exception) -> Exception:
        return LookupError(str(exc)) if isinstance(exc, redis.ResponseError) else exc

    client = sync_client(redis_url)
    try:
        with pytest.raises(LookupError, match="WRONGTYPE"):
            done(_failing(client, Keys(namespace).ledger_prefix + "k"), mapped)
    finally:
        client.close()

    async def run() -> None:
        aclient = async_client(redis_url)
        try:
            await awaited(_failing(aclient, Keys(namespace).ledger_prefix + "k"), mapped)
        finally:
            await aclient.aclose()

    with pytest.raises(LookupError, match="WRONGTYPE"):
        asyncio.run(run())
