"""A ledger whose blobs are in a bucket seals into that bucket: its tiles, ids and checkpoints are
the bucket's named objects (nothing on the sealing machine's disk), and any machine that reaches
the bucket audits the ledger from them."""

from __future__ import annotations

import uuid
from pathlib import Path

import redis

from jobledger.blobs.log_files import NamedLogFiles
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay.ledger_audit import audit_log
from jobledger.runtime.config import BlobsConfig
from jobledger.scheduler.sealer import SealSettings
from tests.blobs.radosgw import RadosGW
from tests.seal_support import seal, signer
from tests.support.replay import stream_entries, workload


def test_a_ledger_with_its_blobs_in_a_bucket_seals_into_the_bucket(
    radosgw: RadosGW, client: redis.Redis, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    workload(ledger, jobs=100)
    bucket = BlobsConfig(url=f"s3://{radosgw.bucket}/seal-{uuid.uuid4().hex[:8]}", options=radosgw.options())
    key = signer(namespace)
    sealing = SealSettings(1000, key, bucket, tmp_path / "sealer")
    events = client.xlen(Keys(namespace).events)
    assert seal(redis_url, namespace, sealing) == events > 256  # more than one tile
    assert not (tmp_path / "sealer").exists()  # nothing on the sealing machine's disk

    elsewhere = SealSettings(1000, key, bucket, tmp_path / "auditor")  # another machine, the same bucket
    log = elsewhere.log_of(namespace, None)
    assert isinstance(log.files, NamedLogFiles)
    latest = log.latest()
    assert latest is not None and latest.checkpoint.size == events
    audit = audit_log(client, Keys(namespace), log)
    assert audit.ok, audit.summary()

    # the stream rewritten under the same ids with one event's actor changed: caught from the bucket
    stream = Keys(namespace).events
    entries = stream_entries(client, namespace)
    client.delete(stream)
    for at, (entry_id, fields) in enumerate(entries):
        client.xadd(stream, {**dict(fields), **({b"actor": b"mallory"} if at == 5 else {})}, id=entry_id)
    changed = audit_log(client, Keys(namespace), log)
    assert not changed.ok and "altered" in changed.summary(), changed.summary()
