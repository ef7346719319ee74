"""Making RFC 9162 proofs and roots from a node-hash source, never from all the leaves.

A *node* ``(level, index)`` is the complete subtree of ``2**level`` leaves starting at leaf
``index * 2**level``; a :data:`NodeSource` answers its hash (the tiles do: see
:class:`jobledger.ledger.seal.tiles.TileNodes`).  Every hash of a proof is the Merkle Tree Hash of a
range of leaves ``[start, end)`` that starts on a multiple of the largest power of two not above its
length, so it is the fold of a few complete nodes (:func:`range_nodes`).  Making a proof is in two
steps: which ranges (the RFC's recursive ``PATH`` and ``SUBPROOF``, walked as loops), then their
hashes; :func:`inclusion_nodes` and :func:`consistency_nodes` name the nodes beforehand, so a
caller can fetch every tile a proof needs at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from jobledger.ledger.seal.hashes import EMPTY_ROOT, node_hash

#: A complete subtree: ``(level, index)``, covering leaves ``[index << level, (index + 1) << level)``.
Node = tuple[int, int]
#: The hash of a complete subtree of the tree (a leaf's hash at level 0).
NodeSource = Callable[[int, int], bytes]
Span = tuple[int, int]


def _split(length: int) -> int:
    """The largest power of two below ``length`` (``length`` >= 2): where RFC 9162 splits a range."""
    return 1 << ((length - 1).bit_length() - 1)


def range_nodes(start: int, end: int) -> list[Node]:
    """The complete subtrees that make up ``[start, end)``, left to right, largest first."""
    nodes: list[Node] = []
    while start < end:
        level = (end - start).bit_length() - 1
        if start & ((1 << level) - 1):
            raise ValueError(f"[{start}, {end}) does not start on a subtree boundary")
        nodes.append((level, start >> level))
        start += 1 << level
    return nodes


def range_hash(start: int, end: int, nodes: NodeSource) -> bytes:
    """The Merkle Tree Hash of leaves ``[start, end)``: its complete subtrees folded from the right."""
    parts = [nodes(level, index) for level, index in range_nodes(start, end)]
    digest = parts.pop()
    while parts:
        digest = node_hash(parts.pop(), digest)
    return digest


def root(size: int, nodes: NodeSource) -> bytes:
    """The root of the tree of the first ``size`` leaves."""
    return range_hash(0, size, nodes) if size else EMPTY_ROOT


def inclusion_spans(index: int, size: int) -> list[Span]:
    """The leaf ranges whose hashes make the inclusion proof of ``index`` in ``size``, in the proof's
    order (the sibling nearest the leaf first)."""
    if not 0 <= index < size:
        raise ValueError(f"index {index} is not in a tree of size {size}")
    spans: list[Span] = []
    lo, hi = 0, size
    while hi - lo > 1:
        mid = lo + _split(hi - lo)
        if index < mid:
            spans.append((mid, hi))
            hi = mid
        else:
            spans.append((lo, mid))
            lo = mid
    spans.reverse()
    return spans


def consistency_spans(old_size: int, new_size: int) -> list[Span]:
    """The leaf ranges whose hashes make the consistency proof from ``old_size`` to ``new_size``, in
    the proof's order; none from the empty tree or between equal sizes."""
    if not 0 <= old_size <= new_size:
        raise ValueError(f"no consistency proof from size {old_size} to {new_size}")
    if old_size in (0, new_size):
        return []
    spans: list[Span] = []
    lo, hi, at_root = 0, new_size, True
    while old_size != hi:
        mid = lo + _split(hi - lo)
        if old_size <= mid:
            spans.append((mid, hi))
            hi = mid
        else:
            spans.append((lo, mid))
            lo, at_root = mid, False
    if not at_root:
        spans.append((lo, hi))
    spans.reverse()
    return spans


def spans_nodes(spans: Iterable[Span]) -> list[Node]:
    """Every node the hashes of ``spans`` are made of, each once, in order."""
    return list(dict.fromkeys(node for start, end in spans for node in range_nodes(start, end)))


def inclusion_nodes(index: int, size: int) -> list[Node]:
    return spans_nodes(inclusion_spans(index, size))


def consistency_nodes(old_size: int, new_size: int) -> list[Node]:
    return spans_nodes(consistency_spans(old_size, new_size))


def inclusion_proof(index: int, size: int, nodes: NodeSource) -> list[bytes]:
    """The inclusion proof of leaf ``index`` in the tree of ``size`` leaves (RFC 9162 §2.1.3.1)."""
    return [range_hash(start, end, nodes) for start, end in inclusion_spans(index, size)]


def consistency_proof(old_size: int, new_size: int, nodes: NodeSource) -> list[bytes]:
    """The consistency proof from the tree of ``old_size`` leaves to that of ``new_size``
    (RFC 9162 §2.1.4.1)."""
    return [range_hash(start, end, nodes) for start, end in consistency_spans(old_size, new_size)]
