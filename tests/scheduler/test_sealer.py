"""The sealer: the ledger's events, sealed into tiles and signed checkpoints outside Redis."""

from __future__ import annotations

from pathlib import Path

import redis

from jobledger.ledger.runner import Ledger
from jobledger.ledger.seal.hashes import EMPTY_ROOT, leaf_hash, node_hash
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.verify import verify_consistency, verify_inclusion
from tests.replay_support import stream_entries, workload
from tests.seal_support import seal, sealed_log, settings, signer


def naive_root(leaves: list[bytes]) -> bytes:
    """RFC 9162's Merkle Tree Hash, recursively, from the leaf hashes."""
    if not leaves:
        return EMPTY_ROOT
    if len(leaves) == 1:
        return leaves[0]
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node_hash(naive_root(leaves[:split]), naive_root(leaves[split:]))


def leaf_hashes(client: redis.Redis, namespace: str) -> list[bytes]:
    return [leaf_hash(leaf_bytes(i, dict(f))) for i, f in stream_entries(client, namespace)]


def test_a_sealed_ledger_publishes_the_root_of_its_events(
    client: redis.Redis, redis_url: str, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    config = settings(tmp_path, signer(namespace))
    workload(ledger)
    assert seal(redis_url, namespace, config) > 0
    log = sealed_log(config, namespace)
    first = log.latest()
    assert first is not None
    leaves = leaf_hashes(client, namespace)
    assert first.checkpoint.size == len(leaves)
    assert first.checkpoint.root == naive_root(leaves)

    workload(ledger, jobs=300)
    seal(redis_url, namespace, config)
    second = log.latest()
    assert second is not None
    leaves = leaf_hashes(client, namespace)
    assert second.checkpoint.size == len(leaves) > 256
    assert second.checkpoint.root == naive_root(leaves)
    old, new = first.checkpoint, second.checkpoint
    verify_consistency(old.size, new.size, old.root, new.root, log.consistency(old.size, new.size))
    ids = [i.decode() for i, _ in stream_entries(client, namespace)]
    for index in (0, 255, 256, len(ids) - 1):
        assert log.index_of(ids[index], new.size) == index
        verify_inclusion(leaves[index], index, new.size, log.inclusion(index, new.size), new.root)
    assert seal(redis_url, namespace, config) == 0  # nothing new: nothing published
