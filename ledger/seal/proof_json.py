"""Proofs as JSON: ``{"index", "size", "leaf", "hashes"}`` for inclusion, ``{"hashes"}`` for consistency.

``leaf`` is the event's canonical leaf bytes as a string (they are UTF-8), ``hashes`` the proof's
hashes in lowercase hex, in the order RFC 9162 gives them.  A consistency proof's sizes are those
asked for (and the checkpoints').  Parsing takes exactly these keys and types, and at most 128
hashes (a tree of 2**63 leaves needs fewer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobledger.ledger.seal.checkpoints import Checkpoint
from jobledger.ledger.seal.errors import Malformed, OtherLog, ProofFailed
from jobledger.ledger.seal.hashes import from_hex, leaf_hash
from jobledger.ledger.seal.leaves import Leaf, parse_leaf
from jobledger.ledger.seal.proofs import NodeSource, consistency_proof, inclusion_proof
from jobledger.ledger.seal.verify import verify_consistency, verify_inclusion

MAX_HASHES = 128


@dataclass(frozen=True)
class InclusionProof:
    """That the event whose leaf bytes are ``leaf`` is leaf ``index`` of the tree of ``size``."""

    index: int
    size: int
    leaf: bytes
    hashes: tuple[bytes, ...]

    @classmethod
    def make(cls, leaf: bytes, index: int, size: int, nodes: NodeSource) -> InclusionProof:
        return cls(index, size, leaf, tuple(inclusion_proof(index, size, nodes)))

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "size": self.size,
            "leaf": self.leaf.decode("utf-8"),
            "hashes": [h.hex() for h in self.hashes],
        }

    @classmethod
    def from_json(cls, value: object) -> InclusionProof:
        obj = _object(value, {"index", "size", "leaf", "hashes"}, "an inclusion proof")
        index, size, leaf = obj["index"], obj["size"], obj["leaf"]
        if type(index) is not int or type(size) is not int or not isinstance(leaf, str):
            raise Malformed("an inclusion proof's index and size are integers, its leaf a string")
        try:
            raw = leaf.encode("utf-8")
        except UnicodeEncodeError as error:
            raise Malformed("an inclusion proof's leaf is not UTF-8 text") from error
        return cls(index, size, raw, _hashes(obj["hashes"]))

    def verify(self, checkpoint: Checkpoint) -> Leaf:
        """The event, once its leaf decodes (else :class:`Malformed`) and the proof leads to
        ``checkpoint``'s root (:meth:`check`)."""
        event = parse_leaf(self.leaf)
        self.check(checkpoint)
        return event

    def check(self, checkpoint: Checkpoint) -> None:
        """:class:`ProofFailed` unless the proof leads from the leaf to ``checkpoint``'s root; a proof
        for another size than the checkpoint's fails too."""
        if self.size != checkpoint.size:
            raise ProofFailed(
                f"the proof is for size {self.size}, the checkpoint is of size {checkpoint.size}"
            )
        verify_inclusion(leaf_hash(self.leaf), self.index, self.size, self.hashes, checkpoint.root)


@dataclass(frozen=True)
class ConsistencyProof:
    """That the tree of one size is a prefix of the tree of a larger one."""

    hashes: tuple[bytes, ...]

    @classmethod
    def make(cls, old_size: int, new_size: int, nodes: NodeSource) -> ConsistencyProof:
        return cls(tuple(consistency_proof(old_size, new_size, nodes)))

    def to_json(self) -> dict[str, Any]:
        return {"hashes": [h.hex() for h in self.hashes]}

    @classmethod
    def from_json(cls, value: object) -> ConsistencyProof:
        return cls(_hashes(_object(value, {"hashes"}, "a consistency proof")["hashes"]))

    def verify(self, old: Checkpoint, new: Checkpoint) -> None:
        """:class:`ProofFailed` unless ``old``'s tree is a prefix of ``new``'s (of the same log)."""
        if old.origin != new.origin:
            raise OtherLog(f"checkpoints of two logs: {old.origin} and {new.origin}")
        verify_consistency(old.size, new.size, old.root, new.root, self.hashes)


def _object(value: object, keys: set[str], what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or set(value) != keys:
        raise Malformed(f"{what} is an object of exactly {', '.join(sorted(keys))}")
    return value


def _hashes(value: object) -> tuple[bytes, ...]:
    if not isinstance(value, list) or len(value) > MAX_HASHES:
        raise Malformed(f"a proof's hashes are a list of at most {MAX_HASHES}")
    return tuple(from_hex(h, "a proof's hash") for h in value)
