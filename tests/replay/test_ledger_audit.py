"""The audit of a sealed log while its sealer publishes: a checkpoint is two writes (the kept one,
then the latest), and an audit that reads between them sees a kept checkpoint newer than the
latest, which is no truncation."""

from __future__ import annotations

import threading
from pathlib import Path

import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay import ledger_audit
from jobledger.replay.ledger_audit import audit_log
from tests.seal_support import seal, sealed_log, settings, signer
from tests.support.replay import workload


def test_a_checkpoint_published_during_the_audit_is_no_truncation(
    client: redis.Redis, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    sealing = settings(tmp_path / "log", signer(namespace))
    workload(ledger, jobs=5)
    seal(redis_url, namespace, sealing)
    workload(ledger, jobs=5)
    seal(redis_url, namespace, sealing)
    log = sealed_log(sealing, namespace)
    (small, small_text), (large, large_text) = log.history()[-2:]
    small_note, large_note = small_text.encode(), large_text.encode()
    assert small < large

    log.files.replace("checkpoint", small_note)  # the kept checkpoint written, the latest not yet
    publish = threading.Timer(2 * ledger_audit.LATEST_PAUSE, log.files.replace, ("checkpoint", large_note))
    publish.start()
    audit = audit_log(client, Keys(namespace), log)
    publish.join()
    assert audit.ok, audit.summary()
    assert audit.size == large

    log.files.replace("checkpoint", small_note)  # and a latest that stays behind is a truncation
    truncated = audit_log(client, Keys(namespace), log)
    assert not truncated.ok
    assert f"truncated: checkpoint {large}: the log was at size {large}" in truncated.summary()
