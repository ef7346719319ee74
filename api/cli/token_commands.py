"""``jobledger token create|list|revoke``: the API tokens of a ledger (see Security in
docs/operations.md).

They talk to the ledger itself, as ``replay`` does (``--config`` / ``--data-dir`` / ``--redis-url``
/ ``--namespace`` say which): a token is an event (``token_created``, ``token_revoked``) holding its
name, scopes and the SHA-256 of its secret.  ``create`` prints the secret once; nothing can show it
again.  Tokens live in a split ledger's home partition: every command goes through the router.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import redis
import typer

from jobledger.cli.common import LEDGER_DEFAULTS, LedgerOptions, SignalStop, fail, ledger_options, open_redis
from jobledger.cli.output import JsonOption, Output, cell
from jobledger.ledger.calls import Call
from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.partitioned import Partitioned, open_ledger
from jobledger.ledger.partitions import PartitionCountMismatch
from jobledger.ledger.tokens import ScopeError, create_token, digest, new_secret, revoke_token
from jobledger.projections import tokens
from jobledger.runtime.config import Config

app = typer.Typer(name="token", help="API tokens: create, list, revoke.", no_args_is_help=True)

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The token's name (who its events name).")]
AsJson = Annotated[bool, JsonOption]
SCOPE_HELP = "admin, read, produce:GLOB or work:GLOB (GLOB matches queue names: build-*); repeat for more."


@contextmanager
def _ledger(url: str, config: Config) -> Iterator[Partitioned]:
    """The configured ledger, split as it is stored (a count other than ``[redis] partitions``: exit 2)."""
    try:
        router = open_ledger(url, config.redis.key_namespace, config.redis.partitions)
    except PartitionCountMismatch as exc:
        fail(exc.message, code=2)
    except (redis.RedisError, OSError) as exc:
        fail(f"Redis is unreachable: {exc}")
    try:
        yield router
    finally:
        for runner in router.runners:
            runner.client.close()


def _run_call(options: LedgerOptions, call: Call[Any]) -> None:
    """Run one token command on the configured ledger; a refusal ends the command (exit 1).  A new
    data directory may be given its first tokens before it is first served."""
    config = options.config()
    with SignalStop() as stop, open_redis(config, stop, create=True) as url, _ledger(url, config) as router:
        try:
            router.run(call)
        except JobLedgerError as exc:
            fail(exc.message)


@app.command()
@ledger_options
def create(
    name: NameArgument,
    scope: Annotated[list[str], typer.Option("--scope", "-s", help=SCOPE_HELP)],
    ledger: LedgerOptions = LEDGER_DEFAULTS,
    as_json: AsJson = False,
) -> None:
    """Create a token and print its secret, once: keep it, nothing shows it again."""
    secret = new_secret()
    try:
        call = create_token(name, scope, digest(secret))
    except ScopeError as exc:
        fail(str(exc), code=2)
    _run_call(ledger, call)
    out = Output(as_json)
    if out.is_json:
        out.json({"name": name, "token": secret})
    else:
        out.note(f"token [bold]{name}[/]: {secret}\n(shown once: keep it now)", secret)


@app.command("list")
@ledger_options
def list_(ledger: LedgerOptions = LEDGER_DEFAULTS, as_json: AsJson = False) -> None:
    """The live tokens: name and scopes (never a secret)."""
    config = ledger.config()
    with SignalStop() as stop, open_redis(config, stop) as url, _ledger(url, config) as router:
        try:
            found = router.read(tokens.tokens())
        except JobLedgerError as exc:
            fail(exc.message)
    out = Output(as_json)
    if out.is_json:
        out.json([{"name": t.name, "scopes": list(t.scopes)} for t in found])
    else:
        out.table("tokens", ("name", "scopes"), [(cell(t.name), cell(" ".join(t.scopes))) for t in found])


@app.command()
@ledger_options
def revoke(name: NameArgument, ledger: LedgerOptions = LEDGER_DEFAULTS, as_json: AsJson = False) -> None:
    """Revoke a token: every server of the ledger refuses it from now on."""
    _run_call(ledger, revoke_token(name))
    out = Output(as_json)
    if out.is_json:
        out.json({"name": name, "revoked": True})
    else:
        out.note(f"token [bold]{name}[/] revoked", name)
