"""The tree, its proofs and their checks agree with RFC 6962's test vectors and with two independent
implementations used only here (``tamperlog``: RFC 6962's recursive definitions; ``pymerkle``)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import tamperlog.merkle as reference
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pymerkle import InmemoryTree

from jobledger.ledger.seal.errors import ProofFailed
from jobledger.ledger.seal.frontier import Frontier
from jobledger.ledger.seal.hashes import EMPTY_ROOT, leaf_hash
from jobledger.ledger.seal.proofs import consistency_proof, inclusion_proof, root
from jobledger.ledger.seal.verify import (
    consistency_length,
    inclusion_length,
    verify_consistency,
    verify_inclusion,
)
from tests.ledger.seal.tree_support import MemoryTree, data, leaves

VECTORS = data("rfc6962_vectors.json")

#: Vectors on which we are stricter than transparency-dev's verifier, and why.
STRICTER = {
    "additional/sizes-are-equal-one-and-proof-is-empty.json": "its roots are 12 bytes: a hash is 32",
}


def b64(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def rfc_leaves() -> list[bytes]:
    return [leaf_hash(bytes.fromhex(h)) for h in VECTORS["leaf_inputs_hex"]]


def test_roots_of_the_rfc_6962_tree() -> None:
    tree = MemoryTree(rfc_leaves())
    frontier = Frontier()
    assert frontier.root() == EMPTY_ROOT == bytes.fromhex(VECTORS["root_hashes_hex"][0])
    for size, leaf in enumerate(rfc_leaves(), start=1):
        frontier.append(leaf)
        want = bytes.fromhex(VECTORS["root_hashes_hex"][size])
        assert frontier.root() == root(size, tree) == want


@pytest.mark.parametrize("name", sorted(VECTORS["inclusion"]))
def test_inclusion_vectors(name: str) -> None:
    v: dict[str, Any] = VECTORS["inclusion"][name]
    proof = [b64(h) for h in v["proof"] or []]

    def check() -> None:
        verify_inclusion(b64(v["leafHash"]), v["leafIdx"], v["treeSize"], proof, b64(v["root"]))

    if v["wantErr"]:
        with pytest.raises(ProofFailed):
            check()
        return
    check()
    if v["treeSize"] <= 8:  # the RFC's tree: our proof is the vector's
        assert inclusion_proof(v["leafIdx"], v["treeSize"], MemoryTree(rfc_leaves())) == proof


@pytest.mark.parametrize("name", sorted(VECTORS["consistency"]))
def test_consistency_vectors(name: str) -> None:
    v: dict[str, Any] = VECTORS["consistency"][name]
    proof = [b64(h) for h in v["proof"] or []]

    def check() -> None:
        verify_consistency(v["size1"], v["size2"], b64(v["root1"]), b64(v["root2"]), proof)

    if v["wantErr"] or name in STRICTER:
        with pytest.raises(ProofFailed):
            check()
        return
    check()
    if 0 < v["size1"] <= v["size2"] <= 8:
        assert consistency_proof(v["size1"], v["size2"], MemoryTree(rfc_leaves())) == proof


def test_every_proof_of_small_trees_is_the_rfcs_definition() -> None:
    """Every inclusion and consistency proof of every tree up to 64 leaves, hash for hash."""
    hashes = leaves(64)
    tree = MemoryTree(hashes)
    for size in range(1, 65):
        head = reference.merkle_root(hashes[:size])
        assert root(size, tree) == head
        for index in range(size):
            proof = inclusion_proof(index, size, tree)
            assert proof == reference.inclusion_proof(index, hashes[:size])
            assert len(proof) == inclusion_length(index, size)
            verify_inclusion(hashes[index], index, size, proof, head)
        for old in range(size + 1):
            proof = consistency_proof(old, size, tree)
            assert proof == reference.consistency_proof(old, hashes[:size])
            if 0 < old < size:
                assert len(proof) == consistency_length(old, size)
            verify_consistency(old, size, reference.merkle_root(hashes[:old]), head, proof)


@settings(max_examples=12, deadline=None)
@given(size=st.integers(1, 2000), salt=st.text(max_size=3))
@example(size=2000, salt="")
@example(size=1024, salt="")
@example(size=1025, salt="")
@example(size=1537, salt="")
def test_trees_up_to_2000_leaves_agree_with_independent_implementations(size: int, salt: str) -> None:
    """For a tree of ``size``: its root, every inclusion proof and every consistency proof into it,
    each checked by tamperlog's verifier and ours."""
    hashes = leaves(size, salt)
    tree = MemoryTree(hashes)
    frontier = Frontier()
    roots = [EMPTY_ROOT]
    for leaf in hashes:
        frontier.append(leaf)
        roots.append(frontier.root())
    assert roots[-1] == root(size, tree) == reference.merkle_root(hashes)
    head = roots[-1]
    for index in range(size):
        proof = inclusion_proof(index, size, tree)
        reference.verify_inclusion(index, size, hashes[index], proof, head)
        verify_inclusion(hashes[index], index, size, proof, head)
    for old in range(1, size + 1):
        proof = consistency_proof(old, size, tree)
        reference.verify_consistency(old, roots[old], size, head, proof)
        verify_consistency(old, size, roots[old], head, proof)


@settings(max_examples=8, deadline=None)
@given(size=st.integers(1, 2000))
def test_roots_agree_with_pymerkle(size: int) -> None:
    entries = [f"entry {i}".encode() for i in range(size)]
    theirs = InmemoryTree(algorithm="sha256")
    frontier = Frontier()
    for entry in entries:
        theirs.append_entry(entry)
        frontier.append(leaf_hash(entry))
        assert frontier.root() == theirs.get_root(frontier.size)
