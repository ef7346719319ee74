"""Proofs as JSON: ``{"index", "size", "leaf", "hashes"}`` and ``{"hashes"}``, parsed strictly and
checked against checkpoints; a rewritten history cannot prove itself consistent with a checkpoint an
auditor kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobledger.ledger.seal.checkpoints import Checkpoint
from jobledger.ledger.seal.errors import Malformed, OtherLog, ProofFailed
from jobledger.ledger.seal.hashes import leaf_hash
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.proof_json import ConsistencyProof, InclusionProof
from jobledger.ledger.seal.proofs import root
from tests.ledger.seal.tree_support import MemoryTree


def leaves(count: int, changed: int | None = None) -> list[bytes]:
    out = []
    for i in range(count):
        actor = "mallory" if i == changed else "local"
        fields = {"type": "job_heartbeat", "at": str(i), "job": str(i + 1), "actor": actor, "data": "{}"}
        out.append(leaf_bytes(f"{i + 1}-0", fields))
    return out


LEAVES = leaves(300)
TREE = MemoryTree([leaf_hash(leaf) for leaf in LEAVES])


def checkpoint(size: int, tree: MemoryTree = TREE, origin: str = "jobledger/prod") -> Checkpoint:
    return Checkpoint(origin, size, root(size, tree))


def test_an_inclusion_proof_round_trips_and_verifies() -> None:
    proof = InclusionProof.make(LEAVES[77], 77, 300, TREE)
    value = json.loads(json.dumps(proof.to_json()))
    assert set(value) == {"index", "size", "leaf", "hashes"} and value["leaf"] == LEAVES[77].decode()
    assert InclusionProof.from_json(value) == proof
    assert proof.verify(checkpoint(300)).id == "78-0"
    with pytest.raises(ProofFailed, match="size 300, the checkpoint is of size 299"):
        proof.verify(checkpoint(299))
    with pytest.raises(ProofFailed):
        InclusionProof(77, 300, LEAVES[78], proof.hashes).verify(checkpoint(300))


GOOD = InclusionProof.make(LEAVES[5], 5, 300, TREE).to_json()


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "index": True},
        {**GOOD, "size": "300"},
        {**GOOD, "leaf": 5},
        {**GOOD, "hashes": "00"},
        {**GOOD, "hashes": [h.upper() for h in GOOD["hashes"]]},
        {**GOOD, "hashes": ["00" * 32] * 129},
        {**GOOD, "more": 1},
        {k: v for k, v in GOOD.items() if k != "leaf"},
        {**GOOD, "leaf": "\ud800"},
        [GOOD],
    ],
)
def test_an_inclusion_proof_that_is_not_one(bad: Any) -> None:
    with pytest.raises(Malformed):
        InclusionProof.from_json(bad)


def test_a_consistency_proof_between_checkpoints() -> None:
    proof = ConsistencyProof.make(100, 300, TREE)
    assert ConsistencyProof.from_json(json.loads(json.dumps(proof.to_json()))) == proof
    proof.verify(checkpoint(100), checkpoint(300))
    with pytest.raises(ProofFailed):
        proof.verify(checkpoint(101), checkpoint(300))
    with pytest.raises(OtherLog):
        proof.verify(checkpoint(100), checkpoint(300, origin="jobledger/prod/p1"))
    for bad in ({"hashes": None}, {"hashes": [], "from": 1}, {}):
        with pytest.raises(Malformed):
            ConsistencyProof.from_json(bad)


@pytest.mark.parametrize("changed", [0, 99, 150, 299])
def test_a_rewritten_history_is_not_consistent_with_a_kept_checkpoint(changed: int) -> None:
    """An auditor kept the checkpoint of size 200.  One event is changed and every later checkpoint is
    signed over the rewritten tree: no consistency proof the rewritten tree gives holds from the kept
    checkpoint, for the events before it (the change is in it) or after (the tree grew from it)."""
    kept = checkpoint(200)
    rewritten = MemoryTree([leaf_hash(leaf) for leaf in leaves(300, changed=changed)])
    latest = checkpoint(300, rewritten)
    proof = ConsistencyProof.make(200, 300, rewritten)
    if changed < 200:
        with pytest.raises(ProofFailed):
            proof.verify(kept, latest)
    else:  # a change after the kept size is not a rewrite of what was kept: only a later checkpoint shows it
        proof.verify(kept, latest)
        with pytest.raises(ProofFailed):
            ConsistencyProof.make(300, 300, rewritten).verify(checkpoint(300), latest)
