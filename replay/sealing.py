"""Sealing one log: extend its tree with the ledger's next events, then publish what was sealed.

:class:`LogSealer` is the sealer's state and its two steps, without Redis (the scheduler feeds it the
entries, :mod:`jobledger.scheduler.sealer`):

- :meth:`LogSealer.resume` rebuilds the tree from what was *published*: the latest checkpoint,
  checked with the log's key (unchecked when it is signed only by another key: the key before a
  rotation), and the tiles up to its size, whose root must be the checkpoint's; the last sealed
  event's id comes from the id files.  Nothing unpublished is trusted, so a sealer that
  died anywhere resumes where the last checkpoint stands.
- :meth:`LogSealer.add` hashes entries (leaf bytes, RFC 9162 leaf hash) into the frontier;
- :meth:`LogSealer.publish` writes, in this order, every new tile and id file (write-once: a file
  already there must hold the same bytes, :class:`~jobledger.blobs.log_files.Conflict`), then the
  checkpoint into ``checkpoints/<size>`` (write-once), then over ``checkpoint``.  A crash before the
  checkpoint leaves tiles beyond it, which the next sealer writes again with the same bytes, so one
  size never gets two roots.  Partial tiles whose full tile is written are removed.
"""

from __future__ import annotations

from typing import Any

from jobledger.ledger.event_lines import RawEntry
from jobledger.ledger.seal.checkpoints import Checkpoint, sign_checkpoint
from jobledger.ledger.seal.frontier import Frontier
from jobledger.ledger.seal.hashes import EMPTY_ROOT, leaf_hash
from jobledger.ledger.seal.keys import SignerKey
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.tiles import WIDTH, Tile, TileWriter
from jobledger.replay.sealed_log import HISTORY, LATEST, SealedLog, encode_ids, ids_path


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class LogSealer:
    """The tree of one log as a sealer grows it (see the module)."""

    def __init__(self, log: SealedLog, signer: SignerKey) -> None:
        self.log = log
        self.signer = signer
        self.published = Checkpoint(log.origin, 0, EMPTY_ROOT)
        self.writer = TileWriter()
        self.frontier = Frontier(sink=self.writer)
        self.last_id: str | None = None
        self._open_ids: list[str] = []  # ids of the leaves of the last, unfinished level-0 tile
        self._full_ids: list[tuple[int, list[str]]] = []  # completed since the last publication

    @property
    def size(self) -> int:
        return self.frontier.size

    def resume(self) -> None:
        """Start again from the latest published checkpoint (see the module)."""
        checkpoint = self.log.latest_by_another_key()
        if checkpoint is None:
            latest = self.log.latest()
            if latest is None:
                self.__init__(self.log, self.signer)  # type: ignore[misc]
                return
            checkpoint = latest.checkpoint
        nodes = self.log.checked_nodes(checkpoint)
        size = checkpoint.size
        self.writer = TileWriter.resume(size, lambda tile: self.log.files.read(tile.path))
        self.frontier = Frontier.from_nodes(size, nodes, self.writer)
        self.published = checkpoint
        self._full_ids = []
        self._open_ids = self.log.ids(size // WIDTH, size) if size % WIDTH else []
        self.last_id = self.log.ids((size - 1) // WIDTH, size)[-1] if size else None

    def add(self, entries: list[RawEntry]) -> int:
        """Add ``entries`` (the ledger's next ones, in order) to the tree; how many.  An entry that
        has no leaf stops it there (:class:`Malformed`), the ones before it added."""
        for entry_id, fields in entries:
            event_id = _s(entry_id)
            self.frontier.append(leaf_hash(leaf_bytes(event_id, fields)))
            self.last_id = event_id
            self._open_ids.append(event_id)
            if len(self._open_ids) == WIDTH:
                self._full_ids.append(((self.frontier.size - 1) // WIDTH, self._open_ids))
                self._open_ids = []
        return len(entries)

    def publish(self) -> Checkpoint | None:
        """Publish the tree as it stands (see the module); the new checkpoint, None when nothing
        was added since the last."""
        size = self.frontier.size
        if size == self.published.size:
            return None
        files = self.log.files
        tiles = self.writer.flush()
        for tile, data in tiles:
            files.create(tile.path, data)
        for number, ids in self._full_ids:
            files.create(ids_path(number), encode_ids(ids))
        if self._open_ids:
            files.create(ids_path(size // WIDTH, len(self._open_ids)), encode_ids(self._open_ids))
        checkpoint = Checkpoint(self.log.origin, size, self.frontier.root())
        note = sign_checkpoint(checkpoint, self.signer).encode("utf-8")
        files.create(f"{HISTORY}/{size}", note)
        files.replace(LATEST, note)
        for tile, _ in tiles:
            if tile.width == WIDTH:
                files.remove_tree(Tile(tile.level, tile.index, 1).path.rsplit("/", 1)[0])
        for number, _ in self._full_ids:
            files.remove_tree(ids_path(number, 1).rsplit("/", 1)[0])
        self._full_ids = []
        self.published = checkpoint
        return checkpoint
