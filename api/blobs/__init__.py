"""Where the bytes of jobs' files and results live: a content-addressed blob store.

:func:`open_store` picks the store the configuration's ``[blobs] url`` names: local disk
(:mod:`jobledger.blobs.local`) by default, an S3, GCS or Azure bucket through obstore
(:mod:`jobledger.blobs.objects`, with the extra ``jobledger[s3]``) for several servers.  Every
store has the one interface of :mod:`jobledger.blobs.store`.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urlparse

from jobledger.blobs.local import LocalBlobStore
from jobledger.blobs.store import Blob, BlobError, BlobMissing, BlobStore, DigestMismatch, TooLarge
from jobledger.runtime.config import BlobsConfig

__all__ = [
    "Blob",
    "BlobError",
    "BlobMissing",
    "BlobStore",
    "DigestMismatch",
    "LocalBlobStore",
    "TooLarge",
    "open_store",
]

OBJECT_SCHEMES = ("s3", "gs", "az", "abfs", "azure")


def open_store(config: BlobsConfig, data_dir: Path, namespace: str) -> BlobStore:
    """The store of ledger ``namespace`` in the place ``config.url`` names: empty, local disk under
    ``data_dir/blobs``; a path or ``file://`` URL, local disk there; ``s3://``, ``gs://``,
    ``az://``, an object store.  Each namespace keeps its blobs in its own part of that place (a
    subdirectory, a key prefix, named after it), as the archive does: a ledger's blob collector
    deletes what its own ledger no longer names, so two ledgers must never share one set of blobs."""
    part = namespace_part(namespace)
    url = config.url.strip()
    if not url:
        return LocalBlobStore(data_dir / "blobs" / part)
    scheme = urlparse(url).scheme
    if scheme == "file":
        return LocalBlobStore(Path(urlparse(url).path) / part)
    if scheme in OBJECT_SCHEMES:
        try:
            from jobledger.blobs.objects import ObjectBlobStore
        except ImportError as missing:
            raise ValueError(
                f"[blobs] url {url!r} is a bucket: that needs obstore, `pip install 'jobledger[s3]'`"
            ) from missing
        return ObjectBlobStore(url.rstrip("/") + "/" + part, config.options)
    if scheme:
        raise ValueError(f"[blobs] url {url!r}: a path, file://, s3://, gs:// or az:// URL")
    return LocalBlobStore(Path(url) / part)


def ledger_folder(part: str, partition: int | None) -> str:
    """The folder of one of a ledger's parts kept beside its blobs (``archive``, ``ledger``): the
    part itself on a ledger of one partition, ``<part>/p<N>`` for partition N of a split one, so
    that every part of a store lays its partitions out alike."""
    return part if partition is None else f"{part}/p{partition}"


def namespace_part(namespace: str) -> str:
    """The namespace as one path segment or key part: percent-encoded where it holds ``/``, ``%``
    or a character a path or key should not, and never ``.`` or ``..``."""
    part = quote(namespace, safe="-_.~:")
    return "%2E" + part[1:] if part in (".", "..") else part
