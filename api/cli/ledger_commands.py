"""``jobledger ledger``: the verifiable ledger's keys, checkpoints and checks.

- ``keygen`` writes the signing key (0600) where the configuration says (``[ledger] signing_key``,
  else the data directory's ``ledger.key``), never over a file; ``key`` prints its verifier key
  (Go's note format), what an auditor keeps.
- ``verify [--since FILE] [--key KEY]`` audits every log of the ledger against its published
  checkpoints and tiles (:mod:`jobledger.replay.ledger_audit`); exit 1 naming the first event that
  differs and how.
- ``checkpoints --save DIR`` copies every checkpoint kept into DIR, for an auditor.
- ``verify-receipt FILE --key KEY`` checks a job's receipt with the verifier key alone: no server.

Exit codes: 0 verified; 1 a difference (or a receipt that does not hold); 2 bad usage (a key file
that exists, no key); 3 the check could not be done.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import redis
import typer

from jobledger.blobs.log_files import log_part, open_log_files
from jobledger.cli.common import LEDGER_DEFAULTS, LedgerOptions, SignalStop, fail, ledger_options
from jobledger.cli.replay_commands import ledger_parts
from jobledger.ledger.keys import Keys
from jobledger.ledger.seal.checkpoints import origin, parse_body
from jobledger.ledger.seal.errors import Malformed, ReceiptFailed, SealError
from jobledger.ledger.seal.keys import VerifierKey, parse_verifier, read_key_file
from jobledger.ledger.seal.receipts import verify_receipt
from jobledger.replay.archive.records import ArchiveError
from jobledger.replay.ledger_audit import LogAudit, audit_log
from jobledger.replay.sealed_log import SealedLog
from jobledger.runtime.config import Config
from jobledger.scheduler.sealer import key_path, make_key_file

app = typer.Typer(
    name="ledger",
    help="The verifiable ledger: its signing key, checkpoints, and checks of events and receipts.",
    no_args_is_help=True,
)

KEY_HELP = "The verifier key (name+id+base64), or a file holding it; repeatable, across a rotation."
KeyOption = Annotated[
    list[str] | None,
    typer.Option("--key", metavar="KEY|FILE", help=KEY_HELP + "  Default: the configured signing key's."),
]


def verifier_keys(given: list[str] | None, config: Config | None) -> list[VerifierKey]:
    """The verifier keys given (text, or files holding it), else the configured signing key's."""
    if not given:
        if config is None:
            fail("--key is required", code=2)
        try:
            return [read_key_file(key_path(config)).verifier]
        except (OSError, Malformed) as exc:
            fail(f"no verifier key: give --key, or a readable signing key ({exc})", code=2)
    keys = []
    for text in given:
        path = Path(text)
        try:
            keys.append(parse_verifier(path.read_text().strip() if path.is_file() else text.strip()))
        except (Malformed, OSError) as exc:
            fail(f"--key {text[:60]!r}: {exc}", code=2)
    return keys


@app.command("keygen")
@ledger_options
def keygen(ledger: LedgerOptions = LEDGER_DEFAULTS) -> None:
    """Write a new signing key (0600) where the configuration says; print its verifier key."""
    config = ledger.config()
    path = key_path(config)
    try:
        key = make_key_file(path, config.redis.key_namespace)
    except FileExistsError:
        fail(f"{path} exists: a signing key is never overwritten (move it away to rotate)", code=2)
    typer.echo(f"wrote the signing key to {path}", err=True)
    typer.echo(key.verifier.text)


@app.command("key")
@ledger_options
def key(ledger: LedgerOptions = LEDGER_DEFAULTS) -> None:
    """Print the verifier key of the configured signing key: what an auditor keeps."""
    config = ledger.config()
    try:
        typer.echo(read_key_file(key_path(config)).verifier.text)
    except FileNotFoundError:
        fail(f"no signing key at {key_path(config)} (jobledger ledger keygen writes one)", code=2)
    except Malformed as exc:
        fail(str(exc), code=2)


def _logs(config: Config, count: int, keys: list[VerifierKey]) -> list[tuple[int | None, SealedLog]]:
    """Each partition (None on a ledger of one) and its published log."""
    ns = config.redis.key_namespace
    partitions: list[int | None] = [None] if count == 1 else list(range(count))
    files = config.blobs, config.embedded.data_dir, ns
    return [(p, SealedLog(open_log_files(*files, p), origin(ns, p), keys)) for p in partitions]


Audited = tuple[redis.Redis, Keys, SealedLog]


@contextmanager
def _ledger_logs(config: Config, stop: SignalStop, keys: list[VerifierKey]) -> Iterator[list[Audited]]:
    """Each partition's client, keys and published log."""
    with ledger_parts(config, stop) as found:
        logs = _logs(config, found.partitioning.count, keys)
        parts = zip(found.parts, logs, strict=True)
        yield [(part.client, Keys(part.namespace), log) for part, (_, log) in parts]


def _since_origin(note: bytes) -> str:
    """The origin a checkpoint file names (its signature is checked later, by its log)."""
    try:
        return parse_body(note.decode("utf-8").split("\n\n", 1)[0] + "\n").origin
    except (UnicodeDecodeError, Malformed) as exc:
        fail(f"--since: not a checkpoint: {exc}", code=2)


def audit_ledger(
    config: Config, stop: SignalStop, keys: list[VerifierKey], since: bytes | None = None
) -> bool:
    """Audit every log of the configured ledger, printing each; whether all hold."""
    wanted = _since_origin(since) if since is not None else None
    ok = True
    with _ledger_logs(config, stop, keys) as logs:
        if wanted is not None and wanted not in {log.origin for _, _, log in logs}:
            fail(f"--since is a checkpoint of {wanted}, not of this ledger", code=2)
        for client, ledger_keys, log in logs:
            try:
                audit = audit_log(client, ledger_keys, log, since if log.origin == wanted else None)
            except (ArchiveError, SealError, OSError, redis.RedisError) as exc:
                fail(f"ledger verify of {log.origin} could not be done: {exc}", code=3)
            _print(audit)
            ok = ok and audit.ok
    return ok


def _print(audit: LogAudit) -> None:
    if audit.finding is not None:
        typer.echo(f"{audit.origin}: {audit.finding}")
    elif audit.notes:
        typer.echo(f"{audit.origin}: {'; '.join(audit.notes)}")
    else:
        typer.echo(f"{audit.origin}: verified {audit.events:,} events against checkpoint {audit.size} "
                   f"({audit.checkpoints} checkpoints signed and consistent)")  # fmt: skip


@app.command("verify")
@ledger_options
def verify(
    ledger: LedgerOptions = LEDGER_DEFAULTS,
    since: Annotated[
        Path | None,
        typer.Option("--since", metavar="CHECKPOINT_FILE", dir_okay=False, help="A checkpoint you kept."),
    ] = None,
    key: KeyOption = None,
) -> None:
    """Check the ledger against its signed checkpoints: every event re-hashed up to the latest one,
    every checkpoint's signature, and --since's consistency with the latest; exit 1 on a difference."""
    config = ledger.config()
    keys = verifier_keys(key, config)
    note = since.read_bytes() if since is not None else None
    with SignalStop() as stop:
        ok = audit_ledger(config, stop, keys, note)
    if not ok:
        raise typer.Exit(1)


@app.command("checkpoints")
@ledger_options
def checkpoints(
    save: Annotated[Path, typer.Option("--save", metavar="DIR", file_okay=False, help="Where to copy them.")],
    ledger: LedgerOptions = LEDGER_DEFAULTS,
) -> None:
    """Copy every checkpoint kept (``<log>/<size>``, and ``<log>/latest``) into DIR."""
    config = ledger.config()
    with SignalStop() as stop, ledger_parts(config, stop) as found:
        logs = _logs(config, found.partitioning.count, [])
    saved = 0
    for partition, log in logs:
        where = save / log_part(partition)
        where.mkdir(parents=True, exist_ok=True)
        for size, note in log.history():
            (where / str(size)).write_text(note)
            saved += 1
        latest = log.latest_note()
        if latest is not None:
            (where / "latest").write_text(latest)
    typer.echo(f"saved {saved} checkpoints into {save}")


@app.command("verify-receipt")
def verify_receipt_command(
    file: Annotated[Path, typer.Argument(dir_okay=False, help="The receipt (JSON).")],
    key: Annotated[list[str], typer.Option("--key", metavar="KEY|FILE", help=KEY_HELP)],
) -> None:
    """Check a job's receipt offline, with the verifier key alone; exit 1 if it does not hold."""
    keys = verifier_keys(key, None)
    try:
        checked = verify_receipt(file.read_bytes(), keys)
    except OSError as exc:
        fail(f"cannot read {file}: {exc}", code=2)
    except ReceiptFailed as exc:
        where = f" (event {exc.event})" if exc.event else ""
        typer.echo(f"receipt does not hold: {exc.kind}{where}: {exc}")
        raise typer.Exit(1) from None
    cp = checked.checkpoint
    typer.echo(f"receipt holds: {len(checked.events)} events of job {checked.job} in {cp.origin} "
               f"at size {cp.size}, signed by {checked.key.name}+{checked.key.id:08x}")  # fmt: skip
