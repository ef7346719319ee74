"""Tiles (C2SP tlog-tiles): their paths, their contents, which a proof reads, and what a sealer writes
after each batch — each path once, the same tiles whether it stopped and resumed or not."""

from __future__ import annotations

import random

import pytest

from jobledger.ledger.seal.errors import Malformed, TileMissing
from jobledger.ledger.seal.frontier import Frontier
from jobledger.ledger.seal.proofs import (
    consistency_nodes,
    consistency_proof,
    inclusion_nodes,
    inclusion_proof,
    root,
)
from jobledger.ledger.seal.tiles import (
    Tile,
    TileNodes,
    TileWriter,
    parse_tile_path,
    tile_hashes,
    tile_of,
    tiles_for,
)
from tests.ledger.seal.tree_support import MemoryTree, leaves

SIZE = 70_000
HASHES = leaves(SIZE)
TREE = MemoryTree(HASHES)


@pytest.mark.parametrize(
    ("tile", "path"),
    [
        (Tile(0, 0), "tile/0/000"),
        (Tile(0, 1234067), "tile/0/x001/x234/067"),
        (Tile(1, 5, 17), "tile/1/005.p/17"),
        (Tile(2, 1000, 1), "tile/2/x001/000.p/1"),
        (Tile(0, 999, 255), "tile/0/999.p/255"),
        (Tile(63, 10**18), "tile/63/x001/x000/x000/x000/x000/x000/000"),
    ],
)
def test_paths(tile: Tile, path: str) -> None:
    assert tile.path == path
    assert parse_tile_path(path) == tile


@pytest.mark.parametrize(
    "path",
    [
        "tile/0/1234",
        "tile/0/x000/001",  # 1 is 001
        "tile/0/01",
        "tile/00/000",
        "tile/64/000",
        "tile/-1/000",
        "tile/0/000.p/0",
        "tile/0/000.p/256",
        "tile/0/000.p/007",
        "tile/0/x01/000",
        "tile/0/x001/x234",
        "/tile/0/000",
        "tile/0/000/",
        "tile/0/000.p/",
        "tile/entries/000",
        "tile/0/000\n",
        "tile/0/\u0660\u0660\u0660",  # Arabic-Indic digits: re's [0-9] only
    ],
)
def test_paths_not_in_their_one_form_are_refused(path: str) -> None:
    with pytest.raises(Malformed):
        parse_tile_path(path)


def written(batches: list[int], start: int = 0, store: dict[Tile, bytes] | None = None) -> dict[Tile, bytes]:
    """The tiles a sealer writes appending ``HASHES[start:]`` in batches ending at those sizes, into
    ``store``; each path once (one already in the store, with the same bytes)."""
    store = {} if store is None else store
    if start:
        writer = TileWriter.resume(start, store.get)
        frontier = Frontier.from_nodes(start, TileNodes(start, store.get), sink=writer)
    else:
        writer = TileWriter()
        frontier = Frontier(sink=writer)
    this_run: set[Tile] = set()
    for end in batches:
        frontier.extend(HASHES[frontier.size : end])
        for tile, data in writer.flush():
            assert tile not in this_run, f"{tile.path} written twice"
            assert store.get(tile, data) == data, f"{tile.path} written again, differently"
            this_run.add(tile)
            store[tile] = data
        assert frontier.root() == root(end, TREE)
    return store


def test_the_tiles_of_70000_leaves() -> None:
    """The tree of C2SP's example: 273 full level-0 tiles, a partial one of 112, a full level-1 tile,
    a partial one of 17 and a partial level-2 tile of 1; each holds the tree's hashes."""
    store = written([SIZE])
    assert sorted(store) == sorted(
        [Tile(0, n) for n in range(273)] + [Tile(0, 273, 112), Tile(1, 0), Tile(1, 1, 17), Tile(2, 0, 1)]
    )
    for tile, data in store.items():
        first = tile.index * 256
        assert tile_hashes(data, tile) == TREE.levels[8 * tile.level][first : first + tile.width]


def test_a_full_tile_of_leaves_makes_one_hash_above() -> None:
    store = written([256])
    assert sorted(store) == [Tile(0, 0), Tile(1, 0, 1)]
    assert store[Tile(1, 0, 1)] == TREE.levels[8][0]


def test_batches_write_each_new_tile_and_the_partial_ones_that_grew() -> None:
    store = written([10, 10, 255, 256, 300, 65_536, 65_537, SIZE])
    assert Tile(0, 0, 10) in store and Tile(0, 0, 255) in store and Tile(0, 1, 44) in store
    assert Tile(1, 0, 1) in store and Tile(1, 1) not in store and Tile(2, 0, 1) in store
    assert not any(t.width == 256 and (t.level, t.index) == (0, 273) for t in store)
    for tile, data in store.items():
        first = tile.index * 256
        assert tile_hashes(data, tile) == TREE.levels[8 * tile.level][first : first + tile.width]


@pytest.mark.parametrize("stop", [1, 255, 256, 65_536, 66_000])
def test_stopped_and_resumed_the_tiles_are_the_same(stop: int) -> None:
    """A sealer that stops at ``stop`` and resumes from the tiles it wrote (its frontier rebuilt from
    them) writes what one that flushed there and went on writes."""
    once = written([stop, SIZE])
    twice = written([SIZE], start=stop, store=written([stop]))
    assert twice == once


def test_proofs_read_from_tiles_are_the_trees() -> None:
    """At checkpoint sizes along the way, proofs served from the tiles equal the whole tree's, and
    read exactly the tiles :func:`tiles_for` names."""
    sizes = [1, 256, 300, 5000, 65_536, 65_600, SIZE]
    store = written(sizes)
    rng = random.Random(7)
    for size in sizes:
        for index in {0, size - 1, rng.randrange(size), rng.randrange(size)}:
            nodes = TileNodes(size, store.__getitem__)
            assert inclusion_proof(index, size, nodes) == inclusion_proof(index, size, TREE)
            assert nodes.reads == len(tiles_for(inclusion_nodes(index, size), size))
        for old in {1, size // 3, size - 1, rng.randrange(1, size + 1)}:
            nodes = TileNodes(size, store.__getitem__)
            assert consistency_proof(old, size, nodes) == consistency_proof(old, size, TREE)
            assert nodes.reads == len(tiles_for(consistency_nodes(old, size), size))


def test_partial_tiles_deleted_once_full_are_read_from_the_full_ones() -> None:
    """A store that deletes a partial tile once its full tile is written (as C2SP allows) still
    serves every proof at every size a checkpoint was published for, and a sealer resumes from it."""
    sizes = [10, 256, 300, 5000, 65_536, 65_600, SIZE]
    store = written(sizes)
    for tile in [t for t in store if t.width < 256 and Tile(t.level, t.index) in store]:
        del store[tile]
    assert Tile(0, 0, 10) not in store and Tile(0, 273, 112) in store
    for size in sizes:
        for index in (0, size // 2, size - 1):
            nodes = TileNodes(size, store.get)
            assert inclusion_proof(index, size, nodes) == inclusion_proof(index, size, TREE)
        nodes = TileNodes(size, store.get)
        assert consistency_proof(size // 3 or 1, size, nodes) == consistency_proof(size // 3 or 1, size, TREE)
    resumed = written([SIZE], start=300, store=store)
    assert resumed[Tile(0, 273, 112)] == written([SIZE])[Tile(0, 273, 112)]


def test_a_tile_that_is_not_kept() -> None:
    store = written([300])
    del store[Tile(0, 1, 44)]
    with pytest.raises(TileMissing, match=r"tile/0/001.p/44 is not kept, nor is tile/0/001"):
        inclusion_proof(299, 300, TileNodes(300, store.get))


def test_a_proof_reads_few_tiles() -> None:
    assert len(tiles_for(inclusion_nodes(12_345, SIZE), SIZE)) <= 4
    assert len(tiles_for(inclusion_nodes(SIZE - 1, SIZE), SIZE)) <= 3
    assert len(tiles_for(inclusion_nodes(12_345, 2**40), 2**40)) <= 5


def test_a_tile_of_the_wrong_length_or_a_node_not_in_the_tree() -> None:
    with pytest.raises(Malformed):
        tile_hashes(b"\x00" * 33, Tile(0, 0, 1))
    with pytest.raises(Malformed):
        TileNodes(300, lambda tile: b"\x00" * 32 * 43)(0, 260)  # the partial tile of 300 is 44 wide
    with pytest.raises(ValueError):
        tile_of(0, 300, 300)
    with pytest.raises(ValueError):
        tile_of(8, 1, 300)  # a second complete subtree of 256 needs 512 leaves


def test_a_writer_hears_entries_in_order_only() -> None:
    writer = TileWriter()
    writer(0, 0, HASHES[0])
    with pytest.raises(ValueError):
        writer(0, 2, HASHES[2])
    with pytest.raises(Malformed):
        TileWriter(300, {0: HASHES[:43]})  # 300 leaves leave 44 open at level 0
