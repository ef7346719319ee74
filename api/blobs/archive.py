"""The archive in the blob store: segments, manifest entries and job indexes as named objects, so
every server that shares the store (the bucket several servers share, or one local path) reads every
ledger's whole history.

Under the ledger's part of the store (beside its blobs, out of the collector's sight), the archive is
the folder ``archive/`` of a ledger of one partition and ``archive/p<N>/`` of partition N of a split
one, as the sealer's log files are ``ledger/`` and ``ledger/p<N>/``
(:func:`jobledger.blobs.ledger_folder`).  In it:

- ``segments/events-<first id>_<last id>.jsonl``: the events, immutable once written;
- ``manifest/<first>_<last>.json``, the ids zero-padded so a listing orders them: one object per
  segment (:class:`jobledger.projections.archive.Segment`, naming the segment before it);
- ``jobs/<bucket>/<first>_<last>.json``: the job index of a segment, for the jobs of ids
  ``bucket * JOBS_PER_BUCKET`` to the next bucket's first that the segment's round removed from
  Redis (forgotten, every event archived), each job's id and every event id of its history.  Reading
  the history of such a job lists one bucket's folder and reads the few indexes in it (jobs expire
  about in the order they were made, so a bucket's jobs leave Redis in one or two rounds).

One object per manifest entry makes the manifest safe for several writers: none rewrites another's
object, and a writer that stopped half way, or lost a race for the archive lock, leaves an entry
the readers skip, since only the chain that ends at the ledger's recorded position counts (a job
index counts only when its segment is in that chain).  A segment's object is written before its
index and entry, and all before the stream is trimmed.

On an object store a reader fetches a segment once into ``cache`` (checked against its SHA-256) and
reads it there, as it reads a local store's files in place.  Entries are immutable too: a reader
lists only the names after the last it knows, and everything again when the chain is not whole.
"""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path

from jobledger.blobs import namespace_part
from jobledger.blobs.named import NamedObjects
from jobledger.blobs.store import BlobStore
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import ArchiveError, JobIndex, Segment
from jobledger.runtime.private import private_dir, private_opener

#: The part of the blob store the archive lives in.
PART = "archive"
#: How many job ids share one folder of job indexes.
JOBS_PER_BUCKET = 4096
_PARTITION = re.compile(r"p\d+")


def _padded(event_id: str) -> str:
    ms, seq = id_key(event_id)
    return f"{ms:020d}-{seq:020d}"


def _range(first: str, last: str) -> str:
    return f"{_padded(first)}_{_padded(last)}"


def entry_name(segment: Segment) -> str:
    """A manifest entry's name: sorted as text, the entries are in id order."""
    return f"manifest/{_range(segment.first, segment.last)}.json"


def bucket_folder(job: int) -> str:
    """The folder of the job indexes that may name job ``job``."""
    return f"jobs/{job // JOBS_PER_BUCKET:012d}/"


class BlobArchive:
    """The archives of one ledger (each partition's) in its store's named objects: what readers read
    (:class:`jobledger.projections.archive.ArchiveSource`) and the archiver writes."""

    def __init__(self, objects: NamedObjects, cache: Path, namespace: str) -> None:
        self.objects, self.cache = objects, cache
        self.partitioning = Partitioning(namespace)
        self._lock = threading.Lock()
        self._known: dict[str, dict[str, Segment]] = {}

    @classmethod
    def over(cls, store: BlobStore, data_dir: Path, namespace: str) -> BlobArchive:
        """The archive of ledger ``namespace`` in its store ``store``'s ``archive/`` part; segments
        of an object store cached in ``data_dir``'s ``archive-cache/<namespace>``."""
        cache = data_dir.expanduser().absolute() / "archive-cache" / namespace_part(namespace)
        return cls(store.named(PART), cache, namespace)

    def location_for(self, namespace: str) -> str:
        """The location the record of ``namespace`` (the ledger's, or one partition's) names: this
        store's archive, and the partition's folder in it."""
        try:
            partition = self.partitioning.index_of(namespace)
        except ValueError as exc:
            raise ArchiveError(f"{exc}: its archive is not in {self.objects.description}") from None
        return self.objects.description + ("" if partition is None else f"/p{partition}")

    def _folder(self, location: str) -> str:
        """The folder in the archive part of a location ('' for a ledger of one partition)."""
        mine = self.objects.description
        folder = location.removeprefix(mine)
        if location == mine or (folder != location and _PARTITION.fullmatch(folder.removeprefix("/"))):
            return folder.removeprefix("/")
        raise ArchiveError(f"the archive is in {location}, which this server cannot read: it reads {mine}")

    def _name(self, location: str, name: str) -> str:
        folder = self._folder(location)
        return f"{folder}/{name}" if folder else name

    def manifest(self, location: str, fresh: bool = False) -> list[Segment]:
        folder = self._folder(location)
        with self._lock:
            known = {} if fresh else dict(self._known.get(folder, {}))
            after = max(known, default="")
            for name in self.objects.names(self._name(location, "manifest/"), after=after):
                data = self.objects.read(name)
                if data is not None:
                    known[name] = Segment.parse(data)
            self._known[folder] = known
            return [known[n] for n in sorted(known)]

    def segment_file(self, location: str, segment: Segment) -> Path:
        name = self._name(location, f"segments/{segment.file}")
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

    def job_indexes(self, location: str, job: int) -> list[JobIndex]:
        """The job indexes that may name ``job``: those of its bucket, oldest segment first."""
        found = []
        for name in self.objects.names(self._name(location, bucket_folder(job))):
            data = self.objects.read(name)
            if data is not None:
                found.append(JobIndex.parse(data))
        return found

    def write_segment(self, location: str, segment: Segment, data: bytes) -> None:
        """Store a segment's events, then its manifest entry: each whole and durable on return."""
        self.objects.write(self._name(location, f"segments/{segment.file}"), data)
        self.objects.write(self._name(location, entry_name(segment)), segment.line().encode())

    def write_jobs(self, location: str, segment: Segment, jobs: dict[int, list[str]]) -> None:
        """Store the job indexes of the ``jobs`` the segment's round removes from Redis (job id ->
        every event id of its history), one per bucket of job ids, durable on return."""
        buckets: dict[str, dict[int, list[str]]] = {}
        for job, ids in sorted(jobs.items()):
            buckets.setdefault(bucket_folder(job), {})[job] = ids
        for folder, held in buckets.items():
            name = self._name(location, f"{folder}{_range(segment.first, segment.last)}.json")
            self.objects.write(name, JobIndex(segment.first, segment.last, held).data())
