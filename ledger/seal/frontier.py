"""The incremental Merkle tree: the right edge a sealer keeps to extend the tree one leaf at a time.

The frontier of a tree of ``size`` leaves is the hashes of its largest complete subtrees, left to
right, one for each bit set in ``size`` (at most 64).  Appending a leaf merges the subtrees it
completes (amortised one node hash per leaf, at most 64); the root folds them from the right.  Its
state is its size and those hashes, so a sealer can write it down and resume from it, or rebuild it
from any node source (the tiles) at a size it published.

A *sink* hears of every complete subtree whose level is a multiple of 8, as it is made: those are
the entries of the tiles (:class:`jobledger.ledger.seal.tiles.TileWriter`), which thus cost no hash
of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jobledger.ledger.seal.errors import Malformed
from jobledger.ledger.seal.hashes import EMPTY_ROOT, from_hex, node_hash
from jobledger.ledger.seal.proofs import NodeSource, range_nodes
from jobledger.ledger.seal.verify import MAX_SIZE

#: ``sink(tile_level, entry_index, digest)``: the subtree of ``256**tile_level`` leaves number
#: ``entry_index``, just completed.
TileSink = Callable[[int, int, bytes], None]


class Frontier:
    """The right edge of the tree: append leaf hashes, read the root at the current size."""

    __slots__ = ("_hashes", "_sink", "size")

    def __init__(self, size: int = 0, hashes: Iterable[bytes] = (), sink: TileSink | None = None) -> None:
        self.size = size
        self._hashes = list(hashes)
        self._sink = sink
        if (
            not 0 <= size < MAX_SIZE
            or len(self._hashes) != size.bit_count()
            or any(len(h) != 32 for h in self._hashes)
        ):
            raise Malformed(f"a frontier of size {size} holds {size.bit_count()} hashes of 32 bytes")

    @classmethod
    def from_nodes(cls, size: int, nodes: NodeSource, sink: TileSink | None = None) -> Frontier:
        """The frontier at ``size`` from a node source (e.g. the tiles written up to that size)."""
        return cls(size, [nodes(level, index) for level, index in range_nodes(0, size)], sink)

    def append(self, leaf: bytes) -> None:
        """Add the leaf whose hash is ``leaf`` as leaf number ``size``."""
        index, hashes, sink = self.size, self._hashes, self._sink
        if sink is not None:
            sink(0, index, leaf)
        digest, level, bits = leaf, 0, index
        while bits & 1:
            digest = node_hash(hashes.pop(), digest)
            level += 1
            bits >>= 1
            if sink is not None and not level & 7:
                sink(level >> 3, bits, digest)
        hashes.append(digest)
        self.size = index + 1

    def extend(self, leaves: Iterable[bytes]) -> None:
        for leaf in leaves:
            self.append(leaf)

    def root(self) -> bytes:
        """The root of the tree of the leaves appended so far."""
        if not self._hashes:
            return EMPTY_ROOT
        digest = self._hashes[-1]
        for left in reversed(self._hashes[:-1]):
            digest = node_hash(left, digest)
        return digest

    def state(self) -> dict[str, Any]:
        """What to write down to resume: ``{"size": n, "hashes": [hex, ...]}``."""
        return {"size": self.size, "hashes": [h.hex() for h in self._hashes]}

    @classmethod
    def from_state(cls, state: Mapping[str, Any], sink: TileSink | None = None) -> Frontier:
        """The frontier :meth:`state` wrote down; :class:`Malformed` if it is not one."""
        size, hashes = state.get("size"), state.get("hashes")
        if (
            set(state) != {"size", "hashes"}
            or type(size) is not int
            or size < 0
            or not isinstance(hashes, list)
        ):
            raise Malformed("a frontier's state is {'size': n, 'hashes': [hex, ...]}")
        return cls(size, [from_hex(h, "a frontier hash") for h in hashes], sink)
