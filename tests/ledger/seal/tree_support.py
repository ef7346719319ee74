"""A whole tree in memory, for tests: every complete subtree's hash, computed once from the leaves."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from jobledger.ledger.seal.hashes import leaf_hash, node_hash

DATA = Path(__file__).parent / "data"


class MemoryTree:
    """The node source of a tree whose leaf hashes are all in memory (levels built bottom up)."""

    def __init__(self, leaves: list[bytes]) -> None:
        self.levels = [list(leaves)]
        while len(self.levels[-1]) > 1:
            below = self.levels[-1]
            self.levels.append([node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])
        self.calls = 0

    def __call__(self, level: int, index: int) -> bytes:
        self.calls += 1
        return self.levels[level][index]


def leaves(count: int, salt: str = "") -> list[bytes]:
    """``count`` distinct leaf hashes."""
    return [leaf_hash(f"{salt}{i}".encode()) for i in range(count)]


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def data(name: str) -> Any:
    """A file of test vectors in ``data/`` (each names its source)."""
    return json.loads((DATA / name).read_text())
