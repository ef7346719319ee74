"""Sealing in tests: the settings of a ledger sealed into the test's directory, and a round of its
sealer run to the end."""

from __future__ import annotations

import asyncio
from pathlib import Path

import redis.asyncio

from jobledger.ledger.runner import AsyncLedger
from jobledger.ledger.seal.checkpoints import origin
from jobledger.ledger.seal.keys import SignerKey, generate
from jobledger.replay.sealed_log import SealedLog
from jobledger.runtime.config import BlobsConfig
from jobledger.scheduler.sealer import Sealer, SealSettings


def signer(namespace: str) -> SignerKey:
    return generate(origin(namespace))


def settings(directory: Path, key: SignerKey, interval_ms: int = 1000) -> SealSettings:
    """Sealing with ``key``, the log's files under ``directory``."""
    return SealSettings(interval_ms, key, BlobsConfig(url=str(directory)), directory)


def sealed_log(seal: SealSettings, namespace: str, partition: int | None = None) -> SealedLog:
    return seal.log_of(namespace, partition)


def seal(redis_url: str, namespace: str, seal: SealSettings, partition: int | None = None,
         base: str | None = None) -> int:  # fmt: skip
    """Rounds of the sealer of ``namespace`` (partition ``partition`` of ``base``) until it has
    nothing left to seal; how many events it sealed."""

    async def rounds() -> int:
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            sealer = Sealer(AsyncLedger(client, namespace), seal, base or namespace, partition)
            total = 0
            while sealed := await sealer.round():
                total += sealed
            return total
        finally:
            await client.aclose()

    return asyncio.run(rounds())
