"""Broken proofs are rejected: every part of a proof is checked (immudb's advisory GHSA-672p-m5jq-mrh8
was a verifier that left part of a proof unchecked).

Every inclusion proof of every tree up to 25 leaves, and every consistency proof up to 20, is
broken every way we know — each hash changed (a bit at each end), each hash dropped, a hash added at
each place, two hashes swapped, the proof of another index or size, an empty proof, another leaf,
another root, every other index and size — and each broken proof must fail.

A size enters the check only as the shape of the path, so a proof can hold for another size whose
shape it shares *with the same root*: the size and the root must come together, from one signed
checkpoint (which is why a proof's own size is compared with its checkpoint's:
tests/ledger/seal/test_receipts.py).  Here every other size comes with its own root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any

import pytest

from jobledger.ledger.seal.errors import ProofFailed
from jobledger.ledger.seal.hashes import node_hash
from jobledger.ledger.seal.proofs import consistency_proof, inclusion_proof, root
from jobledger.ledger.seal.verify import verify_consistency, verify_inclusion
from tests.ledger.seal.tree_support import MemoryTree, leaves, sha

HASHES = leaves(64)
TREE = MemoryTree(HASHES)
ROOTS = [root(size, TREE) for size in range(65)]
OTHER = sha("another hash")


def flipped(digest: bytes, bit: int) -> bytes:
    return (int.from_bytes(digest, "big") ^ (1 << bit)).to_bytes(32, "big")


def mangled(proof: Sequence[bytes]) -> Iterator[tuple[str, list[bytes]]]:
    """Every proof one change away from ``proof``."""
    for i, digest in enumerate(proof):
        for bit in (0, 255):
            yield f"hash {i} bit {bit}", [*proof[:i], flipped(digest, bit), *proof[i + 1 :]]
        yield f"hash {i} dropped", [*proof[:i], *proof[i + 1 :]]
        yield f"hash {i} truncated", [*proof[:i], digest[:31], *proof[i + 1 :]]
    for i in range(len(proof) + 1):
        yield f"a hash added at {i}", [*proof[:i], OTHER, *proof[i:]]
        if proof:
            yield f"hash {i % len(proof)} repeated at {i}", [*proof[:i], proof[i % len(proof)], *proof[i:]]
    for i in range(len(proof) - 1):
        if proof[i] != proof[i + 1]:
            yield f"hashes {i} and {i + 1} swapped", [*proof[:i], proof[i + 1], proof[i], *proof[i + 2 :]]
    if len(proof) > 1:
        yield "reversed", list(reversed(proof))


#: What a proof of the wrong length fails with, before its hashes are looked at.
WRONG_LENGTH = r"has \d+ hashes, not \d+|must be empty"


def rejected(check: Callable[..., None], *args: Any, why: str, match: str | None = None) -> None:
    with pytest.raises(ProofFailed, match=match):
        check(*args)
        pytest.fail(f"accepted a broken proof: {why}")


def length_of(bad: Sequence[bytes], proof: Sequence[bytes]) -> str | None:
    """The failure a mangled proof must meet: its length, if that is what changed."""
    return WRONG_LENGTH if len(bad) != len(proof) else None


@pytest.mark.parametrize("size", range(1, 26))
def test_every_broken_inclusion_proof_is_rejected(size: int) -> None:
    for index in range(size):
        proof = inclusion_proof(index, size, TREE)
        leaf, head = HASHES[index], ROOTS[size]
        verify_inclusion(leaf, index, size, proof, head)
        for why, bad in mangled(proof):
            rejected(verify_inclusion, leaf, index, size, bad, head, why=why, match=length_of(bad, proof))
        if proof:
            rejected(verify_inclusion, leaf, index, size, [], head, why="an empty proof")
        rejected(verify_inclusion, OTHER, index, size, proof, head, why="another leaf")
        rejected(verify_inclusion, flipped(leaf, 7), index, size, proof, head, why="a leaf one bit off")
        rejected(verify_inclusion, leaf, index, size, proof, flipped(head, 3), why="another root")
        for other in range(size + 3):
            if other != index:
                rejected(verify_inclusion, leaf, other, size, proof, head, why=f"index {other}")
        for other in range(1, 2 * size + 2):
            if other != size:
                rejected(verify_inclusion, leaf, index, other, proof, ROOTS[other], why=f"size {other}")
            if other != size and index < other:
                theirs = inclusion_proof(index, other, TREE)
                rejected(verify_inclusion, leaf, index, size, theirs, head, why=f"size {other}'s proof")
                rejected(verify_inclusion, leaf, index, other, theirs, head, why=f"{other}'s proof, our root")


@pytest.mark.parametrize("new", range(1, 21))
def test_every_broken_consistency_proof_is_rejected(new: int) -> None:
    for old in range(1, new + 1):
        proof = consistency_proof(old, new, TREE)
        old_root, new_root = ROOTS[old], ROOTS[new]
        verify_consistency(old, new, old_root, new_root, proof)
        for why, bad in mangled(proof):
            rejected(
                verify_consistency, old, new, old_root, new_root, bad, why=why, match=length_of(bad, proof)
            )
        if proof:
            rejected(verify_consistency, old, new, old_root, new_root, [], why="an empty proof")
        rejected(verify_consistency, old, new, flipped(old_root, 1), new_root, proof, why="old root")
        rejected(verify_consistency, old, new, old_root, flipped(new_root, 1), proof, why="new root")
        if old != new:
            rejected(verify_consistency, old, new, new_root, old_root, proof, why="roots swapped")
            rejected(verify_consistency, new, old, new_root, old_root, proof, why="sizes swapped")
        for other in range(1, 2 * new + 2):
            if other != old and other <= new:
                rejected(verify_consistency, other, new, ROOTS[other], new_root, proof, why=f"from {other}")
                theirs = consistency_proof(other, new, TREE)
                rejected(
                    verify_consistency, old, new, old_root, new_root, theirs, why=f"from {other}'s proof"
                )
            if other != new and other >= old:
                rejected(verify_consistency, old, other, old_root, ROOTS[other], proof, why=f"to {other}")
                theirs = consistency_proof(old, other, TREE)
                rejected(verify_consistency, old, new, old_root, new_root, theirs, why=f"to {other}'s proof")


def test_the_empty_tree_and_equal_sizes() -> None:
    """From the empty tree: an empty proof, and the empty tree's root; between equal sizes: an empty
    proof and the same root; two roots for one size are never consistent."""
    verify_consistency(0, 5, ROOTS[0], ROOTS[5], [])
    verify_consistency(0, 0, ROOTS[0], ROOTS[0], [])
    verify_consistency(5, 5, ROOTS[5], ROOTS[5], [])
    rejected(verify_consistency, 0, 5, ROOTS[1], ROOTS[5], [], why="size 0 with another root")
    rejected(verify_consistency, 0, 5, ROOTS[0], ROOTS[5], [ROOTS[5]], why="a proof from size 0")
    rejected(verify_consistency, 5, 5, ROOTS[5], ROOTS[4], [], why="two roots for size 5")
    rejected(verify_consistency, 5, 5, ROOTS[5], ROOTS[5], [OTHER], why="a proof between equal sizes")


@pytest.mark.parametrize(
    ("index", "size"), [(-1, 4), (4, 4), (0, 0), (True, 4), (1.0, 4), (0, 2**63), ("0", 4)]
)
def test_indices_and_sizes_out_of_range_or_not_integers(index: object, size: object) -> None:
    rejected(verify_inclusion, HASHES[0], index, size, [], ROOTS[1], why=f"{index!r} of {size!r}")


def test_hashes_of_the_wrong_kind() -> None:
    proof = inclusion_proof(2, 8, TREE)
    for bad in (proof[0].hex(), bytearray(proof[0]), proof[0] + b"\x00", None):
        rejected(verify_inclusion, HASHES[2], 2, 8, [bad, *proof[1:]], ROOTS[8], why=repr(bad))
        rejected(verify_inclusion, bad, 2, 8, proof, ROOTS[8], why=f"leaf {bad!r}")
        rejected(verify_inclusion, HASHES[2], 2, 8, proof, bad, why=f"root {bad!r}")


def test_large_trees_are_checked_as_strictly() -> None:
    """A tree of 2**62 leaves and more, whose leaves are all one hash but a few: its proofs verify
    and break like a small tree's."""
    size, old = 2**62 + 12345, 2**40 + 3
    special = {0: sha("first"), 2**61 + 7: sha("middle"), old - 1: sha("old"), size - 1: sha("last")}
    uniform = [sha("leaf")]
    for _ in range(64):
        uniform.append(node_hash(uniform[-1], uniform[-1]))

    @cache
    def nodes(level: int, index: int) -> bytes:
        start, end = index << level, (index + 1) << level
        if not any(start <= s < end for s in special):
            return uniform[level]
        if level == 0:
            return special[index]
        return node_hash(nodes(level - 1, 2 * index), nodes(level - 1, 2 * index + 1))

    head = root(size, nodes)
    for index in special:
        proof = inclusion_proof(index, size, nodes)
        verify_inclusion(special[index], index, size, proof, head)
        for why, bad in mangled(proof):
            rejected(verify_inclusion, special[index], index, size, bad, head, why=why)
        rejected(verify_inclusion, uniform[0], index, size, proof, head, why="an ordinary leaf")
    proof = consistency_proof(old, size, nodes)
    verify_consistency(old, size, root(old, nodes), head, proof)
    for why, bad in mangled(proof):
        rejected(verify_consistency, old, size, root(old, nodes), head, bad, why=why)
    rejected(verify_consistency, old + 1, size, root(old + 1, nodes), head, proof, why="old + 1")
