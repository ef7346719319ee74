"""The tree stored as C2SP tlog-tiles: immutable tiles of 256 hashes, addressed by path.

Tile ``n`` at level ``L`` holds the hashes of the complete subtrees of ``256**L`` leaves numbered
``256 n`` to ``256 n + 255``: at level 0 the leaf hashes, at level ``L`` the roots of the full tiles
of level ``L - 1``.  A tree of ``size`` leaves has ``size >> 8L`` entries at level ``L``; a last tile
of fewer than 256 is *partial* and has the path of its width (``tile/L/N.p/W``), so each path names
one content forever: a full tile never changes, and a partial one is another file at each width
(which may be deleted once the full tile is written: its hashes are the full tile's first ones).
``N`` is written in groups of three digits, all but the last prefixed ``x`` (``x001/x234/067``).

:class:`TileNodes` answers a node hash from the tiles of a tree of a given size (a proof reads a few
tiles, :func:`tiles_for` says which), and :class:`TileWriter` hears the frontier's complete subtrees
and gives the tiles to write after each batch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from jobledger.ledger.seal.errors import Malformed, TileMissing
from jobledger.ledger.seal.hashes import HASH_SIZE, node_hash
from jobledger.ledger.seal.proofs import Node

WIDTH = 256
HEIGHT = 8
MAX_LEVEL = 63

_PATH = re.compile(r"tile/(0|[1-9][0-9]?)/((?:x[0-9]{3}/)*[0-9]{3})(?:\.p/([1-9][0-9]{0,2}))?")


@dataclass(frozen=True, order=True)
class Tile:
    """A tile: its level, its index within the level, and how many hashes it holds."""

    level: int
    index: int
    width: int = WIDTH

    def __post_init__(self) -> None:
        if not (0 <= self.level <= MAX_LEVEL and self.index >= 0 and 1 <= self.width <= WIDTH):
            raise Malformed(f"no tile at level {self.level}, index {self.index}, width {self.width}")

    @property
    def path(self) -> str:
        """``tile/<L>/<N>`` and, for a partial tile, ``.p/<W>``."""
        digits = f"{self.index:d}"
        digits = "0" * (-len(digits) % 3) + digits
        groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
        partial = f".p/{self.width}" if self.width < WIDTH else ""
        return f"tile/{self.level}/" + "/".join(["x" + g for g in groups[:-1]] + groups[-1:]) + partial


def parse_tile_path(path: str) -> Tile:
    """The tile a path names; :class:`Malformed` unless the path is in its one canonical form."""
    match = _PATH.fullmatch(path)
    if match is None:
        raise Malformed(f"not a tile path: {path!r:.100}")
    level, groups, width = match.groups()
    tile = Tile(int(level), int(groups.replace("x", "").replace("/", "")), int(width or WIDTH))
    if tile.path != path:
        raise Malformed(f"not the canonical path of its tile: {path!r:.100}")
    return tile


def tile_hashes(data: bytes, tile: Tile) -> list[bytes]:
    """The hashes of a tile's bytes (its hashes one after the other), checked against its width."""
    if len(data) != tile.width * HASH_SIZE:
        raise Malformed(f"{tile.path} holds {len(data)} bytes, not {tile.width * HASH_SIZE}")
    return [data[i : i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]


def tile_of(level: int, index: int, size: int) -> Tile:
    """The tile of a tree of ``size`` leaves that holds node ``(level, index)`` (complete in that
    tree): the full tile where that tile is full at ``size``, else the partial one of ``size``."""
    tile_level, within = divmod(level, HEIGHT)
    first = index << within
    number = first >> HEIGHT
    entries = size >> (HEIGHT * tile_level)
    if first + (1 << within) > entries:
        raise ValueError(f"node ({level}, {index}) is not complete in a tree of size {size}")
    width = min(WIDTH, entries - (number << HEIGHT))
    return Tile(tile_level, number, width)


def tiles_for(nodes: Iterable[Node], size: int) -> list[Tile]:
    """The tiles that hold ``nodes`` in a tree of ``size`` leaves, each once: what a proof reads."""
    return list(dict.fromkeys(tile_of(level, index, size) for level, index in nodes))


def subtree_hash(hashes: list[bytes]) -> bytes:
    """The root over a power of two of hashes (a complete subtree within a tile)."""
    while len(hashes) > 1:
        hashes = [node_hash(hashes[i], hashes[i + 1]) for i in range(0, len(hashes), 2)]
    return hashes[0]


#: A tile's bytes from where the tiles are kept, or None if it is not there.
TileReader = Callable[[Tile], bytes | None]


class TileNodes:
    """The node source of the tree of ``size`` leaves, read from its tiles by ``read``; each tile read
    once.  A partial tile that is gone (deleted once its full tile was written) is read as the first
    hashes of the full one, which holds them unchanged."""

    def __init__(self, size: int, read: TileReader) -> None:
        self.size = size
        self._read = read
        self._tiles: dict[Tile, list[bytes]] = {}

    def __call__(self, level: int, index: int) -> bytes:
        tile = tile_of(level, index, self.size)
        hashes = self._tiles.get(tile)
        if hashes is None:
            hashes = self._tiles[tile] = self._fetch(tile)
        within = level % HEIGHT
        first = (index << within) - (tile.index << HEIGHT)
        return subtree_hash(hashes[first : first + (1 << within)])

    def _fetch(self, tile: Tile) -> list[bytes]:
        data = self._read(tile)
        if data is not None:
            return tile_hashes(data, tile)
        full = Tile(tile.level, tile.index)
        data = self._read(full) if tile != full else None
        if data is None:
            raise TileMissing(f"{tile.path} is not kept, nor is {full.path}")
        return tile_hashes(data, full)[: tile.width]

    @property
    def reads(self) -> int:
        """How many tiles have been read."""
        return len(self._tiles)


class TileWriter:
    """The tiles of a growing tree: a frontier's sink (:class:`~.frontier.Frontier`) feeds it every
    tile entry as it is made, and :meth:`flush` gives what to write after a batch.

    Made at the size the tree resumes from, with the entries of the partial tiles at that size
    (:meth:`resume` reads them), so that a tile completed later holds all its 256 hashes."""

    def __init__(self, size: int = 0, partial: dict[int, list[bytes]] | None = None) -> None:
        self._open: dict[int, list[bytes]] = {level: list(h) for level, h in (partial or {}).items()}
        self._numbers = {level: (size >> (HEIGHT * (level + 1))) for level in range(MAX_LEVEL + 1)}
        self._full: list[tuple[Tile, bytes]] = []
        self._touched: set[int] = set()
        for level, hashes in self._open.items():
            if len(hashes) != (size >> (HEIGHT * level)) % WIDTH:
                raise Malformed(f"level {level} of a tree of size {size} has {len(hashes)} open entries")

    @classmethod
    def resume(cls, size: int, read: TileReader) -> TileWriter:
        """The writer of a tree whose tiles up to ``size`` were written, reading its partial tiles."""
        nodes = TileNodes(size, read)
        partial: dict[int, list[bytes]] = {}
        level = 0
        while size >> (HEIGHT * level):
            width = (size >> (HEIGHT * level)) % WIDTH
            if width:
                first = size >> (HEIGHT * (level + 1)) << HEIGHT
                partial[level] = [nodes(HEIGHT * level, first + i) for i in range(width)]
            level += 1
        return cls(size, partial)

    def __call__(self, level: int, index: int, digest: bytes) -> None:
        """Hear entry ``index`` of tile level ``level`` (the frontier's sink)."""
        hashes = self._open.setdefault(level, [])
        if index != (self._numbers[level] << HEIGHT) + len(hashes):
            raise ValueError(f"tile entry ({level}, {index}) out of order")
        hashes.append(digest)
        self._touched.add(level)
        if len(hashes) == WIDTH:
            self._full.append((Tile(level, self._numbers[level]), b"".join(hashes)))
            self._numbers[level] += 1
            hashes.clear()

    def flush(self) -> list[tuple[Tile, bytes]]:
        """The tiles to write for the tree as it now stands: every tile completed since the last
        flush, then each partial tile that has grown since (none is empty)."""
        out = self._full
        for level in sorted(self._touched):
            hashes = self._open[level]
            if hashes:
                out.append((Tile(level, self._numbers[level], len(hashes)), b"".join(hashes)))
        self._full, self._touched = [], set()
        return out
