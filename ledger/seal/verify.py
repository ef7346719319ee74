"""Checking RFC 9162 proofs: an inclusion proof (§2.1.3.2) and a consistency proof (§2.1.4.2).

Each check is the RFC's algorithm, with every input checked before it runs: sizes and indices are
non-negative integers in range, every hash is 32 bytes, and the proof has exactly the number of hashes
its index and sizes call for (the count is worked out independently of the algorithm, which also
fails a proof that runs short or long).  A proof is accepted only for the index and sizes it was made
for; nothing of it goes unchecked.

Edge cases, decided here: a consistency proof between equal sizes is empty and the roots are equal;
from the empty tree it is empty and the old root is the empty tree's (SHA-256 of nothing), since the
empty tree is a prefix of every tree.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from jobledger.ledger.seal.errors import ProofFailed
from jobledger.ledger.seal.hashes import EMPTY_ROOT, HASH_SIZE, node_hash

#: Sizes and indices beyond this are not ours to check (a tree of 2**63 leaves).
MAX_SIZE = 2**63


def inclusion_length(index: int, size: int) -> int:
    """How many hashes the inclusion proof of leaf ``index`` in a tree of ``size`` has: the siblings
    below the point where the paths to ``index`` and to the last leaf part, and one for each left
    sibling above it."""
    inner = (index ^ (size - 1)).bit_length()
    return inner + (index >> inner).bit_count()


def consistency_length(old_size: int, new_size: int) -> int:
    """How many hashes the consistency proof from ``old_size`` to ``new_size`` (0 < old < new) has:
    the old tree's last complete subtree (unless the old tree is complete) and its inclusion path."""
    level = (old_size & -old_size).bit_length() - 1
    first = 0 if old_size == 1 << level else 1
    return first + inclusion_length((old_size - 1) >> level, ((new_size - 1) >> level) + 1)


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    """Raise :class:`ProofFailed` unless ``proof`` shows the leaf hash ``leaf`` at ``index`` in the
    tree of ``size`` leaves whose root is ``root``."""
    _check_count(size, "size")
    _check_count(index, "index")
    if index >= size:
        raise ProofFailed(f"index {index} is not below the tree size {size}")
    _check_hashes([leaf, root, *proof])
    want = inclusion_length(index, size)
    if len(proof) != want:
        raise ProofFailed(f"inclusion proof of {index} in {size} has {len(proof)} hashes, not {want}")
    _, r = _walk(leaf, index, size - 1, proof)
    if not hmac.compare_digest(r, root):
        raise ProofFailed(f"inclusion proof of {index} in {size} does not lead to the root")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Raise :class:`ProofFailed` unless ``proof`` shows that the tree of ``old_size`` leaves with
    root ``old_root`` is a prefix of the tree of ``new_size`` leaves with root ``new_root``."""
    _check_count(old_size, "old size")
    _check_count(new_size, "new size")
    if old_size > new_size:
        raise ProofFailed(f"old size {old_size} is beyond new size {new_size}")
    _check_hashes([old_root, new_root, *proof])
    if old_size == 0 or old_size == new_size:
        _check_trivial(old_size, new_size, old_root, new_root, proof)
        return
    want = consistency_length(old_size, new_size)
    if len(proof) != want:
        raise ProofFailed(
            f"consistency proof from {old_size} to {new_size} has {len(proof)} hashes, not {want}"
        )
    fr, sr = _consistency_roots(old_size, new_size, old_root, list(proof))
    if not hmac.compare_digest(fr, old_root):
        raise ProofFailed(f"consistency proof from {old_size} to {new_size} does not lead to the old root")
    if not hmac.compare_digest(sr, new_root):
        raise ProofFailed(f"consistency proof from {old_size} to {new_size} does not lead to the new root")


def _consistency_roots(first: int, second: int, first_hash: bytes, path: list[bytes]) -> tuple[bytes, bytes]:
    """The old and the new root a consistency proof leads to (0 < first < second): the walk from the
    old tree's last complete subtree (the old root itself when the old tree is complete)."""
    if first & (first - 1) == 0:
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    return _walk(path[0], fn, sn, path[1:])


def _walk(seed: bytes, fn: int, sn: int, path: Sequence[bytes]) -> tuple[bytes, bytes]:
    """RFC 9162's walk up from node ``fn`` of a level whose last node is ``sn``, hashing in the
    path: the root over the hashes to the left only (what an old tree sees) and the root over all of
    them; :class:`ProofFailed` if the path runs longer or shorter than the walk."""
    fr = sr = seed
    for c in path:
        if sn == 0:
            raise ProofFailed("the proof is longer than its path")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofFailed("the proof is shorter than its path")
    return fr, sr


def _check_trivial(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """From the empty tree, or between equal sizes: no hash to show, only roots to compare."""
    if proof:
        raise ProofFailed(f"consistency proof from {old_size} to {new_size} must be empty")
    if old_size == 0 and not hmac.compare_digest(old_root, EMPTY_ROOT):
        raise ProofFailed("the root of a tree of size 0 is not the empty tree's")
    if old_size == new_size and not hmac.compare_digest(old_root, new_root):
        raise ProofFailed(f"two different roots for one size {old_size}")


def _check_count(value: object, what: str) -> None:
    if type(value) is not int or not 0 <= value < MAX_SIZE:
        raise ProofFailed(f"{what} is not an integer from 0 to 2**63 - 1: {value!r:.40}")


def _check_hashes(hashes: Sequence[object]) -> None:
    for digest in hashes:
        if type(digest) is not bytes or len(digest) != HASH_SIZE:
            raise ProofFailed(f"a hash is not {HASH_SIZE} bytes: {digest!r:.80}")
