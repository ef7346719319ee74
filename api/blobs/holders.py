"""Who holds a blob: the queues a token must be able to read to name the blob in a job of its own.

Blobs are shared by SHA-256, so knowing a hash must not be enough to get the bytes: a job body that
names a blob by its SHA-256 is only taken from a token that may read a queue holding that blob
(or ``admin``; with auth off everyone is ``local`` and may).  A queue holds a blob when

- a file or a result of one of its jobs names it: the ``blob:{sha256}`` projection (queue -> how
  many names), written by the appliers with the ``blobs`` counts, so replay builds it like every
  projection and it drops a queue once its last job naming the blob is gone; or
- the blob was stored for it with ``PUT /blob?queue=Q``, before any job names it:
  ``blobs:uploads:{sha256}`` (a set of queues), the blob store's bookkeeping in the home partition
  like the collector's, not a projection (storing bytes appends no event), and deleted by the
  collector when it sweeps the blob.
"""

from __future__ import annotations

from typing import Any

from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.partitions import spread
from jobledger.ledger.reads import Read
from jobledger.ledger.runner import AsyncLedger


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def holders(sha256: str) -> Read[set[str]]:
    """The queues holding the blob (see the module), read in every partition."""
    return Read(
        lambda k: [
            ("HKEYS", k.build("blob_queues", sha256=sha256)),
            ("SMEMBERS", k.build("blob_uploads", sha256=sha256)),
        ],
        lambda r: {_s(q) for q in (*r[0], *r[1])},
        spread(lambda parts: set().union(*parts)),
    )


async def _home(ledger: AsyncLedger | OpeningLedger) -> AsyncLedger:
    return ledger if isinstance(ledger, AsyncLedger) else (await ledger.opened()).home


async def remember_upload(ledger: AsyncLedger | OpeningLedger, sha256: str, queue: str) -> None:
    """The blob was stored for ``queue`` (``PUT /blob?queue=``): readers of the queue may name it."""
    home = await _home(ledger)
    await home.client.sadd(home.keys.build("blob_uploads", sha256=sha256), queue)


def uploads_key(ledger: AsyncLedger, sha256: str) -> str:
    """The key of the blob's uploads, which the collector deletes with the blob."""
    return ledger.keys.build("blob_uploads", sha256=sha256)
