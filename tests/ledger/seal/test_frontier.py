"""The frontier: written down mid-way and resumed, or rebuilt from the tree's nodes, it gives the same
roots as one that never stopped; a state that is not a frontier's is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobledger.ledger.seal.errors import Malformed
from jobledger.ledger.seal.frontier import Frontier
from jobledger.ledger.seal.proofs import root
from tests.ledger.seal.tree_support import MemoryTree, leaves

HASHES = leaves(3000)
TREE = MemoryTree(HASHES)


def roots_without_stopping() -> list[bytes]:
    frontier = Frontier()
    out = [frontier.root()]
    for leaf in HASHES:
        frontier.append(leaf)
        out.append(frontier.root())
    return out


ROOTS = roots_without_stopping()


def test_roots_are_the_trees_at_every_size() -> None:
    for size in (1, 2, 3, 255, 256, 257, 1023, 1024, 2999, 3000):
        assert ROOTS[size] == root(size, TREE)


@pytest.mark.parametrize("cuts", [[1], [7, 8, 9], [255, 256, 511, 1024], [1000, 2047, 2048, 2999]])
def test_written_down_and_resumed_the_roots_are_the_same(cuts: list[int]) -> None:
    frontier = Frontier()
    for size in range(1, len(HASHES) + 1):
        frontier.append(HASHES[size - 1])
        assert frontier.root() == ROOTS[size]
        if size in cuts:  # as a sealer would: through JSON, into a new process
            frontier = Frontier.from_state(json.loads(json.dumps(frontier.state())))
            assert frontier.size == size and frontier.root() == ROOTS[size]


@pytest.mark.parametrize("size", [0, 1, 2, 5, 256, 257, 2048, 2999])
def test_rebuilt_from_the_trees_nodes(size: int) -> None:
    frontier = Frontier.from_nodes(size, TREE)
    assert frontier.root() == ROOTS[size]
    frontier.extend(HASHES[size:])
    assert frontier.root() == ROOTS[-1]


def test_extend_is_append_one_by_one() -> None:
    frontier = Frontier()
    frontier.extend(HASHES[:100])
    frontier.extend(HASHES[100:])
    assert frontier.root() == ROOTS[-1] and frontier.size == 3000


@pytest.mark.parametrize(
    "state",
    [
        {"size": 3, "hashes": [HASHES[0].hex()]},  # 3 has two bits set: two hashes
        {"size": 2, "hashes": [HASHES[0].hex(), HASHES[1].hex()]},
        {"size": -1, "hashes": []},
        {"size": 2**63, "hashes": [HASHES[0].hex()]},
        {"size": True, "hashes": [HASHES[0].hex()]},
        {"size": 1.0, "hashes": [HASHES[0].hex()]},
        {"size": 1, "hashes": [HASHES[0].hex().upper()]},
        {"size": 1, "hashes": [HASHES[0].hex()[:-2]]},
        {"size": 1, "hashes": HASHES[0].hex()},
        {"size": 1, "hashes": [HASHES[0].hex()], "root": ""},
        {"hashes": []},
    ],
)
def test_a_state_that_is_not_a_frontiers_is_refused(state: dict[str, Any]) -> None:
    with pytest.raises(Malformed):
        Frontier.from_state(state)
