"""The archive in the blob store: segments and manifest entries as named objects, so every server
that shares the store (the bucket several servers share, or one local path) reads every ledger's
whole history.

Under the store's ``archive/`` part (beside its blobs, out of the collector's sight), each ledger
(each partition's namespace) has its own folder, named after its namespace:

- ``segments/events-<first id>_<last id>.jsonl``: the events, immutable once written;
- ``manifest/<first>_<last>.json``, the ids zero-padded so a listing orders them: one object per
  segment (:class:`jobledger.projections.archive.Segment`, naming the segment before it).

One object per manifest entry makes the manifest safe for several writers: none rewrites another's
object, and a writer that stopped half way, or lost a race for the archive lock, leaves an entry
the readers skip, since only the chain that ends at the ledger's recorded position counts.  A
segment's object is written before its entry, and both before the stream is trimmed.

On an object store a reader fetches a segment once into ``cache`` (checked against its SHA-256) and
reads it there, as it reads a local store's files in place.  Entries are immutable too: a reader
lists only the names after the last it knows, and everything again when the chain is not whole.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from jobledger.blobs import namespace_part
from jobledger.blobs.named import NamedObjects
from jobledger.blobs.store import BlobStore
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import ArchiveError, Segment
from jobledger.runtime.private import private_dir, private_opener

#: The part of the blob store the archive lives in.
PART = "archive"


def _padded(event_id: str) -> str:
    ms, seq = id_key(event_id)
    return f"{ms:020d}-{seq:020d}"


def entry_name(segment: Segment) -> str:
    """A manifest entry's name: sorted as text, the entries are in id order."""
    return f"manifest/{_padded(segment.first)}_{_padded(segment.last)}.json"


class BlobArchive:
    """Every ledger's archive in one store's named objects: what readers read
    (:class:`jobledger.projections.archive.ArchiveSource`) and the archiver writes."""

    def __init__(self, objects: NamedObjects, cache: Path) -> None:
        self.objects, self.cache = objects, cache
        self._lock = threading.Lock()
        self._known: dict[str, dict[str, Segment]] = {}

    @classmethod
    def over(cls, store: BlobStore, data_dir: Path) -> BlobArchive:
        """The archive in ``store``'s ``archive/`` part; segments of an object store cached in
        ``data_dir``'s ``archive-cache``."""
        return cls(store.named(PART), data_dir.expanduser().absolute() / "archive-cache")

    def location_for(self, namespace: str) -> str:
        """The location a ledger's record names: this store, and the namespace's folder in it."""
        return f"{self.objects.description}/{namespace_part(namespace)}"

    def _folder(self, location: str) -> str:
        mine = self.objects.description + "/"
        folder = location.removeprefix(mine)
        if folder == location or not folder or "/" in folder:
            raise ArchiveError(
                f"the archive is in {location}, which this server cannot read: it reads {mine}"
            )
        return folder

    def manifest(self, location: str, fresh: bool = False) -> list[Segment]:
        folder = self._folder(location)
        with self._lock:
            known = {} if fresh else dict(self._known.get(folder, {}))
            after = max(known, default="")
            for name in self.objects.names(f"{folder}/manifest/", after=after):
                data = self.objects.read(name)
                if data is not None:
                    known[name] = Segment.parse(data)
            self._known[folder] = known
            return [known[n] for n in sorted(known)]

    def segment_file(self, location: str, segment: Segment) -> Path:
        name = f"{self._folder(location)}/segments/{segment.file}"
        local = self.objects.local_path(name)
        if local is not None:
            if not local.is_file():
                raise ArchiveError(f"archive segment {local} is missing")
            return local
        cached = self.cache / name
        if not cached.is_file():
            self._fetch(name, segment, cached)
        return cached

    def _fetch(self, name: str, segment: Segment, cached: Path) -> None:
        data = self.objects.read(name)
        if data is None:
            raise ArchiveError(f"archive segment {name} is missing from {self.objects.description}")
        if hashlib.sha256(data).hexdigest() != segment.sha256:
            raise ArchiveError(
                f"archive segment {name} in {self.objects.description} is not what its manifest says"
            )
        private_dir(cached.parent)
        partial = cached.with_name(cached.name + f".{threading.get_ident()}.partial")
        with open(partial, "wb", opener=private_opener) as handle:
            handle.write(data)
        partial.replace(cached)

    def write_segment(self, location: str, segment: Segment, data: bytes) -> None:
        """Store a segment's events, then its manifest entry: each whole and durable on return."""
        folder = self._folder(location)
        self.objects.write(f"{folder}/segments/{segment.file}", data)
        self.objects.write(f"{folder}/{entry_name(segment)}", segment.line().encode())
