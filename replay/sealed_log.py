"""A sealed log as published outside Redis, read back: its checkpoints, tiles and event ids, and the
proofs and receipts made from them.

A log's files (:mod:`jobledger.blobs.log_files`):

- ``checkpoint``: the latest signed checkpoint (replaced at each publication);
- ``checkpoints/<size>``: every checkpoint published, kept (write-once);
- ``tile/<L>/<N>[.p/<W>]``: the tree's tiles (C2SP tlog-tiles);
- ``ids/<N>[.p/<W>]``: the stream ids of the leaves of level-0 tile N, one per line: how an event id
  is found in the tree (a binary search over these files) and how ``ledger verify`` names an event.

:class:`SealedLog` answers what a route or a checker asks: the latest checkpoint, an event's index,
an inclusion or consistency proof, a job's receipt.  Everything it reads is checked against the
signed checkpoint (a proof is checked before it is handed out); it never reads Redis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobledger.blobs.log_files import LogFiles
from jobledger.ledger.seal.checkpoints import Checkpoint, SignedCheckpoint, open_checkpoint, parse_body
from jobledger.ledger.seal.errors import Malformed, TileMissing
from jobledger.ledger.seal.hashes import from_base64
from jobledger.ledger.seal.keys import VerifierKey
from jobledger.ledger.seal.leaves import stream_order
from jobledger.ledger.seal.notes import DASH
from jobledger.ledger.seal.proofs import consistency_proof, inclusion_proof, root
from jobledger.ledger.seal.receipts import build_receipt
from jobledger.ledger.seal.tiles import WIDTH, Tile, TileNodes

LATEST = "checkpoint"
HISTORY = "checkpoints"


def ids_path(number: int, width: int = WIDTH) -> str:
    """The path of the ids of level-0 tile ``number`` holding ``width`` leaves."""
    return "ids/" + Tile(0, number, width).path.removeprefix("tile/0/")


def encode_ids(ids: Sequence[str]) -> bytes:
    return "".join(i + "\n" for i in ids).encode("ascii")


class SealedLog:
    """One log's published files, read with the verifier ``keys`` (several across a rotation)."""

    def __init__(self, files: LogFiles, origin: str, keys: Sequence[VerifierKey]) -> None:
        self.files = files
        self.origin = origin
        self.keys = list(keys)

    # checkpoints

    def latest_note(self) -> str | None:
        """The latest checkpoint's note as published (unchecked), None before the first."""
        data = self.files.read(LATEST)
        return None if data is None else data.decode("utf-8", "replace")

    def open(self, note: str | bytes) -> SignedCheckpoint:
        """A checkpoint of this log signed by one of its keys (else :class:`SealError`)."""
        return open_checkpoint(note, self.keys, self.origin)

    def latest(self) -> SignedCheckpoint | None:
        """The latest checkpoint, its signature checked; None before the first."""
        note = self.files.read(LATEST)
        return None if note is None else self.open(note)

    def latest_by_another_key(self) -> Checkpoint | None:
        """The latest checkpoint when no signature of it is by one of this log's keys (signed before a
        rotation), its signatures unchecked; None otherwise."""
        note = self.latest_note()
        if note is None:
            return None
        text, _, lines = note.rpartition("\n\n")
        ours = {f"{DASH}{key.name} " for key in self.keys}
        ids = {key.id.to_bytes(4, "big") for key in self.keys}
        for line in lines.splitlines():
            name = next((prefix for prefix in ours if line.startswith(prefix)), None)
            if name is not None and from_base64(line[len(name) :], "a signature")[:4] in ids:
                return None
        return parse_body(text + "\n")

    def kept(self, size: int) -> bool:
        """Whether a checkpoint of ``size`` was published (and is kept): the sizes proofs are for."""
        return self.files.read(f"{HISTORY}/{size}") is not None

    def history(self) -> list[tuple[int, str]]:
        """Every checkpoint kept, ``(size, note)``, smallest first (unchecked)."""
        sizes = sorted(int(name) for name in self.files.names(HISTORY) if name.isdigit())
        out = []
        for size in sizes:
            data = self.files.read(f"{HISTORY}/{size}")
            if data is not None:
                out.append((size, data.decode("utf-8", "replace")))
        return out

    # the tree

    def nodes(self, size: int) -> TileNodes:
        """The node source of the tree of ``size`` leaves, from its tiles."""
        return TileNodes(size, lambda tile: self.files.read(tile.path))

    def checked_nodes(self, checkpoint: Checkpoint) -> TileNodes:
        """The tiles of a checkpoint's tree, once their root is the checkpoint's (else :class:`Malformed`)."""
        nodes = self.nodes(checkpoint.size)
        if root(checkpoint.size, nodes) != checkpoint.root:
            raise Malformed(
                f"the tiles of {self.origin} do not make the root of its checkpoint {checkpoint.size}"
            )
        return nodes

    def ids(self, number: int, size: int) -> list[str]:
        """The event ids of the leaves of level-0 tile ``number`` in the tree of ``size`` leaves."""
        width = min(WIDTH, size - number * WIDTH)
        if width <= 0:
            raise ValueError(f"no tile {number} in a tree of {size} leaves")
        data = self.files.read(ids_path(number, width)) if width < WIDTH else None
        if data is None:
            data = self.files.read(ids_path(number))
        if data is None:
            raise TileMissing(f"{ids_path(number, width)} is not kept, nor is {ids_path(number)}")
        ids = data.decode("ascii").splitlines()
        if len(ids) < width:
            raise Malformed(f"{ids_path(number, width)} holds {len(ids)} ids, not {width}")
        return ids[:width]

    def index_of(self, event_id: str, size: int) -> int | None:
        """The leaf index of the event ``event_id`` in the tree of ``size`` leaves, None if it has
        none there: a binary search over the id files (about log2(size / 256) reads)."""
        if size == 0:
            return None
        target = stream_order(event_id)
        lo, hi = 0, (size - 1) // WIDTH  # the last tile whose first id is at most the target
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if stream_order(self.ids(mid, size)[0]) <= target:
                lo = mid
            else:
                hi = mid - 1
        ids = self.ids(lo, size)
        if event_id in ids:
            return lo * WIDTH + ids.index(event_id)
        return None

    # proofs

    def inclusion(self, index: int, size: int) -> list[bytes]:
        return inclusion_proof(index, size, self.nodes(size))

    def consistency(self, old_size: int, new_size: int) -> list[bytes]:
        return consistency_proof(old_size, new_size, self.nodes(new_size))

    def receipt(
        self, job: int, note: str, key: VerifierKey, events: Sequence[tuple[str, bytes]]
    ) -> dict[str, Any]:
        """The receipt of ``job`` against the checkpoint ``note`` from its events ``(id, leaf
        bytes)``, in stream order, each sealed at that checkpoint (else :class:`LookupError`)."""
        checkpoint = self.open(note).checkpoint
        placed = []
        for event_id, leaf in events:
            index = self.index_of(event_id, checkpoint.size)
            if index is None:
                raise LookupError(f"event {event_id} is not sealed in checkpoint {checkpoint.size}")
            placed.append((leaf, index))
        return build_receipt(job, note, key, placed, self.nodes(checkpoint.size))
