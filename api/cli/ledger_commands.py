"""``jobledger ledger``: the verifiable ledger's keys, checkpoints and checks.

- ``keygen`` writes the signing key (0600) where the configuration says (``[ledger] signing_key``,
  else the data directory's ``ledger.key``), never over a file; ``key`` prints its verifier key
  (Go's note format), what an auditor keeps.
- ``verify [--since FILE] [--key KEY]`` audits every log of the ledger against its published
  checkpoints and tiles (:mod:`jobledger.replay.ledger_audit`); exit 1 naming the first event that
  differs and how.
- ``checkpoints --save DIR`` copies every checkpoint kept into DIR, for an auditor.
- ``receipt JOB_ID`` prints a job's receipt, asked of a running server (``--url``);
- ``verify-receipt FILE --key KEY`` checks a job's receipt with the verifier key alone: no server.

Exit codes: 0 verified; 1 a difference (or a receipt that does not hold); 2 bad usage (a key file
that exists, no key); 3 the check could not be done.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from jobledger.blobs.log_files import log_part
from jobledger.cli.common import LEDGER_DEFAULTS, LedgerOptions, SignalStop, fail, ledger_options
from jobledger.cli.http import UrlOption, connected
from jobledger.cli.ledger_checks import audit_parts, configured_keys, published_logs
from jobledger.cli.replay_commands import ledger_parts
from jobledger.ledger.seal.errors import Malformed, ReceiptFailed
from jobledger.ledger.seal.keys import VerifierKey, parse_verifier, read_key_file
from jobledger.ledger.seal.receipts import verify_receipt
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
        keys = configured_keys(config) if config is not None else None
        if keys is None:
            fail("no verifier key: give --key, or configure a readable signing key", code=2)
        return keys
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


def audit_ledger(
    config: Config, stop: SignalStop, keys: list[VerifierKey], since: bytes | None = None
) -> bool:
    """Audit every log of the configured ledger, printing each; whether all hold."""
    with ledger_parts(config, stop) as found:
        return audit_parts(config, found.parts, keys, found.archive, since)


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
        logs = published_logs(config, found.partitioning.count, [])
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


@app.command("receipt")
def receipt(
    job_id: Annotated[int, typer.Argument(help="The job's id.")],
    url: UrlOption = None,
) -> None:
    """Print a job's receipt (JSON) from a running server: keep it, and check it later with
    verify-receipt.  Exit 1 while some of its events are not sealed yet (try again in a moment)."""
    with connected(url) as client:
        found = client.receipt(job_id)
    typer.echo(json.dumps(found, ensure_ascii=False, indent=1))


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
