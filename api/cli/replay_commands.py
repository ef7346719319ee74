"""``jobledger replay rebuild`` and ``jobledger replay verify``: the projections from the ledger alone.

Both read the ledger straight from Redis (the shared ``--config`` / ``--data-dir`` /
``--redis-url`` / ``--namespace`` options say which), archived events included, and show their
progress on a terminal.  A namespace they create and do not finish is removed: an interrupted
rebuild leaves nothing behind, and verify's scratch namespace never outlives it.

Exit codes: 0 done (verify: no difference); 1 verify found differences (or, with ``--blobs``, a
blob missing or corrupt); 2 bad usage; 3 the run could not be done (e.g. the target namespace is
not empty, the archive cannot be read); 130 interrupted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import redis
import typer

from jobledger.blobs import BlobError, open_store
from jobledger.cli.common import (
    LEDGER_DEFAULTS,
    LedgerOptions,
    SignalStop,
    fail,
    ledger_options,
    open_redis,
)
from jobledger.ledger.durations import format_time
from jobledger.ledger.keys import Keys
from jobledger.ledger.redis_clients import masked_url, sync_client
from jobledger.ledger.slot_routing import in_slot_of, on_cluster, slot_of
from jobledger.replay.archive.records import ArchiveError
from jobledger.replay.blob_audit import BlobAudit, audit_blobs
from jobledger.replay.progress import Meter
from jobledger.replay.rebuild import NamespaceNotEmpty, UnknownEventType, ensure_empty, rebuild
from jobledger.replay.source import UntilError, ledger_length, resolve_until, xrange
from jobledger.replay.swap import SwapConflict, swap
from jobledger.replay.verify import drop_namespace, verify
from jobledger.runtime.config import Config

app = typer.Typer(
    name="replay",
    help="Rebuild the projections from the ledger alone, or verify the live ones against it.",
    no_args_is_help=True,
)

UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until",
        metavar="ID|TIME",
        help="Stop at this event id (inclusive), or at the last event at or before this RFC 3339 time.",
    ),
]
BatchOption = Annotated[int, typer.Option(min=1, max=100_000, help="Events per script call.")]
FAILURES = (NamespaceNotEmpty, ArchiveError, UnknownEventType, redis.RedisError, OSError)


@contextmanager
def ledger_client(config: Config, stop: SignalStop, *, create: bool = False) -> Iterator[redis.Redis]:
    """A Redis client of the configured ledger's server (the embedded one started if need be; in a
    data directory that holds no ledger, only with ``create``)."""
    with open_redis(config, stop, create=create) as url:
        client = sync_client(url, config.redis.key_namespace)
        try:
            yield client
        finally:
            client.close()


def until_id(client: redis.Redis, keys: Keys, text: str | None) -> str | None:
    """``--until`` as an event id (None without one); a usage error if there is no such point."""
    if text is None:
        return None
    try:
        found = resolve_until(client, keys, text)
    except UntilError as exc:
        fail(str(exc), code=2)
    if found is None:
        fail(f"the ledger '{keys.namespace}' has no event at or before {text}", code=3)
    return found


def default_target(namespace: str) -> str:
    """A fresh namespace to rebuild into, in the ledger's Cluster slot (so its node is the ledger's)."""
    return in_slot_of(f"{namespace}-rebuild-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}", namespace)


def serve_hint(config: Config, namespace: str, reach: list[str]) -> str:
    """The command that serves a rebuilt view: the options that reached this Redis, a port beside
    the live server's, and ``--read-only``."""
    options = " ".join(
        [f"--namespace {namespace}", "--read-only", f"--port {config.server.port + 1}", *reach]
    )
    return f"jobledger serve {options}"


def reach_options(ledger: LedgerOptions) -> list[str]:
    """The shared options given to this command that say where Redis is, to repeat them (a
    password in ``--redis-url`` masked: the hint is printed, and terminals and logs keep it)."""
    url = masked_url(ledger.redis_url) if ledger.redis_url else None
    given = {"--config": ledger.config_path, "--data-dir": ledger.data_dir, "--redis-url": url}
    return [f"{flag} {value}" for flag, value in given.items() if value]


def _event_at(client: redis.Redis, keys: Keys, event_id: str | None) -> str:
    """`` (at TIME)`` for an event still in the stream, for the summary."""
    if event_id is None:
        return ""
    found = xrange(client, keys.events, event_id, event_id)
    return f" (at {format_time(int(found[0][1][b'at']))})" if found else ""


@app.command("rebuild")
@ledger_options
def rebuild_command(
    ledger: LedgerOptions = LEDGER_DEFAULTS,
    until: UntilOption = None,
    into: Annotated[
        str | None,
        typer.Option(help="Namespace to build into; it must be empty (default NAMESPACE-rebuild-TIME)."),
    ] = None,
    batch: BatchOption = 2000,
    swap_live: Annotated[
        bool,
        typer.Option(
            "--swap",
            help="Rebuild the live projections online: build them anew beside the live ones while "
            "the server runs, catch up, then switch to them in one atomic step.",
        ),
    ] = False,
) -> None:
    """Build the projections from the ledger alone, into a fresh namespace.

    With --until, a view of the whole system as of that point, to serve read-only.  With --swap,
    the live projections themselves are rebuilt while the server runs."""
    config = ledger.config()
    source = config.redis.key_namespace
    if swap_live:
        if until is not None or into is not None:
            fail("--swap rebuilds the live projections: it takes neither --until nor --into", code=2)
        _swap(config, batch)
        return
    target = into or default_target(source)
    if target == source:
        fail("--into must name another namespace than the ledger's", code=2)
    with SignalStop() as stop, ledger_client(config, stop) as client:
        if into is not None and slot_of(into) != slot_of(source) and on_cluster(client):
            fail(
                f"on a Cluster, --into must name a namespace in the ledger's slot, as "
                f"'{in_slot_of(into, source)}' is (or leave --into out)",
                code=2,
            )
        keys = Keys(source)
        last = until_id(client, keys, until)
        try:
            ensure_empty(client, Keys(target))
        except NamespaceNotEmpty as exc:
            fail(str(exc), code=3)
        with removed_unless_done(client, target), Meter("rebuild", ledger_length(client, keys)) as meter:
            try:
                rebuild(client, source, target, last, batch, meter.update)
            except FAILURES as exc:
                fail(f"rebuild failed: {exc}", code=3)
        typer.echo(f"rebuilt {meter.summary()} from ledger '{source}' into namespace '{target}'")
        if last is not None:
            typer.echo(f"as of event {last}{_event_at(client, keys, last)}")
        typer.echo("serve it read-only with:")
        typer.echo("  " + serve_hint(config, target, reach_options(ledger)))
    if stop.fired:
        fail("interrupted; the partial rebuild was removed", code=130)


def _swap(config: Config, batch: int) -> None:
    source = config.redis.key_namespace
    with SignalStop() as stop, ledger_client(config, stop) as client:
        with Meter("rebuild", ledger_length(client, Keys(source))) as meter:
            try:
                done = swap(client, source, batch, progress=meter.update)
            except (SwapConflict, *FAILURES) as exc:
                fail(f"online rebuild failed, the live projections are unchanged: {exc}", code=3)
        typer.echo(
            f"rebuilt {meter.summary()}; generation {done.new} of ledger '{source}' is live (was "
            f"{done.old}) after {done.rounds} catch-up rounds and a final step of {done.tail} events; "
            f"{done.removed} keys of the old generation removed"
        )
    if stop.fired:
        fail("interrupted; the live projections are unchanged", code=130)


def _span(first: str | None, last: str | None) -> str:
    """The ledger positions a verification compared at, for its summary."""
    if last is None:
        return "an empty ledger"
    return f"event {last}" if first == last else f"events {first} to {last}"


@contextmanager
def removed_unless_done(client: redis.Redis, namespace: str) -> Iterator[None]:
    """Remove the namespace if the block does not finish (an error, or an interrupt)."""
    done = False
    try:
        yield
        done = True
    finally:
        if not done:
            drop_namespace(client, namespace)


@app.command("verify")
@ledger_options
def verify_command(
    ledger: LedgerOptions = LEDGER_DEFAULTS,
    batch: BatchOption = 2000,
    chunk: Annotated[int, typer.Option(min=1, max=10_000, help="Keys compared per atomic read.")] = 200,
    blobs: Annotated[
        bool,
        typer.Option(
            "--blobs",
            help="Also read every blob the jobs still in the projections refer to: it must be in the "
            "store ([blobs] url) and hash to its name.",
        ),
    ] = False,
) -> None:
    """Compare the live projections with a rebuild, key by key; exit 1 on any difference.

    The rebuild goes into a scratch namespace, removed afterwards; the server may keep running."""
    config = ledger.config()
    ns = config.redis.key_namespace
    with SignalStop() as stop, ledger_client(config, stop) as client:
        with Meter("verify", ledger_length(client, Keys(ns))) as meter:
            try:
                result = verify(client, ns, batch=batch, chunk=chunk, progress=meter.update)
            except FAILURES as exc:
                fail(f"verify failed: {exc}", code=3)
        for difference in result.differences:
            typer.echo(str(difference))
        span = _span(result.first, result.last)
        where = f"ledger '{ns}': {result.keys:,} keys compared as of {span}; replayed {meter.summary()}"
        if result.ok:
            typer.echo(f"verified {where}: no difference")
        else:
            typer.echo(f"{len(result.differences)} of {result.keys:,} keys differ in {where}")
            if (hint := result.outdated_layout()) is not None:
                typer.echo(hint)
        blobs_ok = _verify_blobs(config, client) if blobs and not stop.fired else True
    if stop.fired:
        fail("interrupted; the scratch namespace was removed", code=130)
    if not (result.ok and blobs_ok):
        raise typer.Exit(1)


def _verify_blobs(config: Config, client: redis.Redis) -> bool:
    """``--blobs``: print each problem and a summary; whether there was none."""
    store = open_store(config.blobs, config.embedded.data_dir, config.redis.key_namespace)

    async def audit() -> BlobAudit:
        try:
            return await audit_blobs(client, config.redis.key_namespace, store)
        finally:
            await store.close()

    try:
        found = asyncio.run(audit())
    except (*FAILURES, BlobError) as exc:
        fail(f"verify --blobs failed: {exc}", code=3)
    for problem in found.problems:
        typer.echo(str(problem))
    checked = f"{found.checked:,} blobs referred to by the jobs, in {store.description}"
    if found.ok:
        typer.echo(f"verified {checked}: each there, {found.bytes:,} bytes read, each hashing to its name")
    else:
        typer.echo(f"{len(found.problems)} of {checked} are missing or corrupt")
    return found.ok
