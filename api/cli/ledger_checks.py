"""What ``jobledger ledger verify`` and ``jobledger replay verify`` share: each partition's published
log, audited against the ledger (:mod:`jobledger.replay.ledger_audit`), and what is printed of it."""

from __future__ import annotations

import redis
import typer

from jobledger.blobs.log_files import open_log_files
from jobledger.cli.common import fail
from jobledger.ledger.keys import Keys
from jobledger.ledger.seal.checkpoints import origin, parse_body
from jobledger.ledger.seal.errors import Malformed, SealError
from jobledger.ledger.seal.keys import VerifierKey, read_key_file
from jobledger.projections.archive import ArchiveError, ArchiveSource
from jobledger.replay.ledger_audit import LogAudit, audit_log
from jobledger.replay.parts import Part
from jobledger.replay.sealed_log import SealedLog
from jobledger.runtime.config import Config
from jobledger.scheduler.sealer import key_path


def published_logs(config: Config, count: int, keys: list[VerifierKey]) -> list[tuple[int | None, SealedLog]]:
    """Each partition (None on a ledger of one) and its published log."""
    ns = config.redis.key_namespace
    partitions: list[int | None] = [None] if count == 1 else list(range(count))
    files = config.blobs, config.embedded.data_dir, ns
    return [(p, SealedLog(open_log_files(*files, p), origin(ns, p), keys)) for p in partitions]


def _since_origin(note: bytes) -> str:
    """The origin a checkpoint file names (its signature is checked later, by its log)."""
    try:
        return parse_body(note.decode("utf-8").split("\n\n", 1)[0] + "\n").origin
    except (UnicodeDecodeError, Malformed) as exc:
        fail(f"--since: not a checkpoint: {exc}", code=2)


def audit_parts(
    config: Config,
    parts: list[Part],
    keys: list[VerifierKey],
    archive: ArchiveSource,
    since: bytes | None = None,
) -> bool:
    """Audit the log of each partition of the ledger (``parts``), its archived events read through
    ``archive``, printing each; whether all hold.  ``since``: a checkpoint an auditor kept, of one of
    the logs."""
    wanted = _since_origin(since) if since is not None else None
    logs = published_logs(config, len(parts), keys)
    if wanted is not None and wanted not in {log.origin for _, log in logs}:
        fail(f"--since is a checkpoint of {wanted}, not of this ledger", code=2)
    ok = True
    for part, (_, log) in zip(parts, logs, strict=True):
        try:
            mine = since if log.origin == wanted else None
            audit = audit_log(part.client, Keys(part.namespace), log, mine, archive)
        except (ArchiveError, SealError, OSError, redis.RedisError) as exc:
            fail(f"ledger verify of {log.origin} could not be done: {exc}", code=3)
        print_audit(audit)
        ok = ok and audit.ok
    return ok


def configured_keys(config: Config) -> list[VerifierKey] | None:
    """The verifier key of the configured signing key; None when there is none to read."""
    try:
        return [read_key_file(key_path(config)).verifier]
    except (OSError, Malformed):
        return None


def print_audit(audit: LogAudit) -> None:
    typer.echo(audit.summary())
