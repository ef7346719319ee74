"""``jobledger replay rebuild`` and ``jobledger replay verify``: the projections from the ledger alone
(and ``replay drop``, :mod:`jobledger.cli.replay_drop`, to delete a rebuild's namespace).

Both read the ledger straight from Redis (the shared ``--config`` / ``--data-dir`` /
``--redis-url`` / ``--namespace`` options say which), archived events included, and show their
progress on a terminal.  On a ledger split into partitions each works on every partition in turn
(verify reports each and the whole; a rebuild ``--into`` is split as its ledger is).  A namespace
they create and do not finish is removed: an interrupted
rebuild leaves nothing behind, and verify's scratch namespace never outlives it.

``replay verify`` also checks the ledger's events against its signed checkpoints, as ``jobledger
ledger verify`` does, when a signing key is configured.

Exit codes: 0 done (verify: no difference); 1 verify found differences (or, with ``--blobs``, a
blob missing or corrupt; or an event that is not the one sealed); 2 bad usage; 3 the run could
not be done (e.g. the target namespace is not empty, the archive cannot be read); 130 interrupted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated

import redis
import typer

from jobledger.blobs import BlobError, open_store
from jobledger.blobs.archive import BlobArchive
from jobledger.cli.common import (
    LEDGER_DEFAULTS,
    LedgerOptions,
    SignalStop,
    fail,
    ledger_options,
    open_redis,
)
from jobledger.cli.ledger_checks import audit_parts, configured_keys
from jobledger.cli.replay_drop import drop_command
from jobledger.ledger.durations import format_time
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.redis_clients import masked_url, sync_client
from jobledger.ledger.slot_routing import in_slot_of, on_cluster, slot_of
from jobledger.projections.archive import ArchiveError, ArchiveSource
from jobledger.replay.blob_audit import BlobAudit, audit_blobs
from jobledger.replay.parts import Part, PartRebuild, mark, parts_of, rebuild_parts, stored_count
from jobledger.replay.progress import Meter
from jobledger.replay.rebuild import NamespaceNotEmpty, UnknownEventType, ensure_empty
from jobledger.replay.source import UntilError, ledger_length, resolve_until, xrange
from jobledger.replay.swap import SwapConflict, swap
from jobledger.replay.verify import Verification, drop_namespace, verify
from jobledger.runtime.config import Config

app = typer.Typer(
    name="replay",
    help="Rebuild the projections from the ledger alone, verify the live ones against it, or drop a "
    "rebuild's namespace.",
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


@dataclass(frozen=True)
class SplitLedger:
    """The configured ledger as replay sees it: its base namespace's client, how it is split, a
    part per partition (one, the namespace itself, on a ledger of one partition), and the archive
    in the blob store that its archived events are read from."""

    url: str
    base: redis.Redis
    partitioning: Partitioning
    parts: list[Part]
    archive: BlobArchive

    @property
    def split(self) -> bool:
        return self.partitioning.count > 1

    def label(self, part: Part) -> str:
        """How a run names one partition in what it prints."""
        return f"partition {part.index} ('{part.namespace}') of " if self.split else ""


@contextmanager
def ledger_parts(config: Config, stop: SignalStop, *, create: bool = False) -> Iterator[SplitLedger]:
    """The configured ledger on its server (the embedded one started if need be; in a data directory
    that holds no ledger, only with ``create``), split as it is stored (one part when no count is)."""
    try:
        store = open_store(config.blobs, config.embedded.data_dir, config.redis.key_namespace)
    except ValueError as exc:
        fail(str(exc), code=2)
    archive = BlobArchive.over(store, config.embedded.data_dir, config.redis.key_namespace)
    with open_redis(config, stop, create=create) as url:
        ns = config.redis.key_namespace
        base = sync_client(url, ns)
        try:
            partitioning = Partitioning(ns, stored_count(base, ns) or 1)
            with parts_of(url, partitioning) as parts:
                yield SplitLedger(url, base, partitioning, parts, archive)
        finally:
            base.close()
            asyncio.run(store.close())


def until_ids(ledger: SplitLedger, text: str | None) -> list[str | None]:
    """``--until`` as each partition's event id (all None without one); a usage error if it names
    no point, and exit 3 when no partition has an event that old."""
    if text is None or not ledger.split:
        return [until_id(part.client, Keys(part.namespace), text, ledger.archive) for part in ledger.parts]
    try:
        found = [
            resolve_until(part.client, Keys(part.namespace), text, ledger.archive) for part in ledger.parts
        ]
    except UntilError as exc:
        fail(str(exc), code=2)
    if all(f is None for f in found):
        fail(f"the ledger '{ledger.partitioning.namespace}' has no event at or before {text}", code=3)
    return found


def until_id(client: redis.Redis, keys: Keys, text: str | None, archive: ArchiveSource | None) -> str | None:
    """``--until`` as an event id (None without one); a usage error if there is no such point."""
    if text is None:
        return None
    try:
        found = resolve_until(client, keys, text, archive)
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
    with SignalStop() as stop, ledger_parts(config, stop) as found:
        elsewhere = into is not None and slot_of(into) != slot_of(source)
        if elsewhere and not found.split and on_cluster(found.base):
            fail(
                f"on a Cluster, --into must name a namespace in the ledger's slot, as "
                f"'{in_slot_of(into or source, source)}' is (or leave --into out)",
                code=2,
            )
        untils = until_ids(found, until)
        into_split = Partitioning(target, found.partitioning.count)
        with parts_of(found.url, into_split) as targets:
            for made in targets:
                try:
                    ensure_empty(made.client, Keys(made.namespace))
                except NamespaceNotEmpty as exc:
                    fail(str(exc), code=3)
            total = sum(ledger_length(part.client, Keys(part.namespace)) for part in found.parts)
            with removed_unless_done(found.base, target, targets), Meter("rebuild", total) as meter:
                # (a partition with no event as old as --until has nothing to fold)
                work = [
                    PartRebuild(part, made, last)
                    for part, made, last in zip(found.parts, targets, untils, strict=True)
                    if last is not None or until is None
                ]
                try:
                    rebuild_parts(work, batch, meter.update, found.archive)
                except FAILURES as exc:
                    fail(f"rebuild failed: {exc}", code=3)
                mark(found.url, targets, into_split)
        typer.echo(f"rebuilt {meter.summary()} from ledger '{source}' into namespace '{target}'")
        if found.split:
            typer.echo(f"split as the ledger is, into {found.partitioning.count} partitions")
        for part, last in zip(found.parts, untils, strict=True):
            if last is not None:
                at = _event_at(part.client, Keys(part.namespace), last)
                typer.echo(f"{found.label(part)}as of event {last}{at}")
        typer.echo("serve it read-only with:")
        typer.echo("  " + serve_hint(config, target, reach_options(ledger)))
    if stop.fired:
        fail("interrupted; the partial rebuild was removed", code=130)


def _swap(config: Config, batch: int) -> None:
    source = config.redis.key_namespace
    with SignalStop() as stop, ledger_parts(config, stop) as found:
        for part in found.parts:
            if stop.fired:
                break
            with Meter("rebuild", ledger_length(part.client, Keys(part.namespace))) as meter:
                try:
                    done = swap(
                        part.client, part.namespace, batch, progress=meter.update, archive=found.archive
                    )
                except (SwapConflict, *FAILURES) as exc:
                    which = f" of partition {part.index}" if found.split else ""
                    fail(f"online rebuild{which} failed, the live projections are unchanged: {exc}", code=3)
            typer.echo(
                f"rebuilt {meter.summary()}; generation {done.new} of {found.label(part)}ledger '{source}' "
                f"is live (was {done.old}) after {done.rounds} catch-up rounds and a final step of "
                f"{done.tail} events; {done.removed} keys of the old generation removed"
            )
    if stop.fired:
        fail("interrupted; the live projections are unchanged", code=130)


def _span(first: str | None, last: str | None) -> str:
    """The ledger positions a verification compared at, for its summary."""
    if last is None:
        return "an empty ledger"
    return f"event {last}" if first == last else f"events {first} to {last}"


@contextmanager
def removed_unless_done(
    client: redis.Redis, namespace: str, parts: list[Part] | None = None
) -> Iterator[None]:
    """Remove the namespace (``client`` reaches it), and each of ``parts``, if the block does not
    finish (an error, or an interrupt).  An interrupt can come while a command is on its way, its
    answer unread on its connection: every connection is dropped first, so that the removal's
    commands do not read that answer as theirs."""
    done = False
    try:
        yield
        done = True
    finally:
        if not done:
            for reaching in [client, *(part.client for part in parts or [])]:
                reaching.connection_pool.disconnect()
            drop_namespace(client, namespace)
            for part in parts or []:
                drop_namespace(part.client, part.namespace)


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
            "store (\\[blobs] url) and hash to its name.",
        ),
    ] = False,
) -> None:
    """Compare the live projections with a rebuild, key by key; exit 1 on any difference.

    The rebuild goes into a scratch namespace, removed afterwards; the server may keep running."""
    config = ledger.config()
    ns = config.redis.key_namespace
    with SignalStop() as stop, ledger_parts(config, stop) as found:
        results: list[Verification] = []
        for part in found.parts:
            if stop.fired:
                break
            results.append(_verify_part(found, part, batch, chunk))
        ok = all(r.ok for r in results)
        if found.split and not stop.fired:
            keys, differing = sum(r.keys for r in results), sum(len(r.differences) for r in results)
            where = f"ledger '{ns}', {found.partitioning.count} partitions: {keys:,} keys compared"
            if ok:
                typer.echo(f"verified {where}: no difference")
            else:
                bad = ", ".join(str(p.index) for p, r in zip(found.parts, results, strict=False) if not r.ok)
                typer.echo(f"{differing} of {keys:,} keys differ in {where} (in partition {bad})")
        blobs_ok = _verify_blobs(config, found.parts) if blobs and not stop.fired else True
        sealed_ok = _verify_sealed(config, found) if not stop.fired else True
    if stop.fired:
        fail("interrupted; the scratch namespace was removed", code=130)
    if not (ok and blobs_ok and sealed_ok):
        raise typer.Exit(1)


def _verify_sealed(config: Config, ledger: SplitLedger) -> bool:
    """The ledger's events against its signed checkpoints (``jobledger ledger verify``), with the
    configured signing key's verifier key; said and skipped when no signing key is configured."""
    keys = configured_keys(config)
    if keys is None:
        typer.echo("the ledger was not checked against its checkpoints: no signing key is configured")
        return True
    return audit_parts(config, ledger.parts, keys, ledger.archive)


def _verify_part(found: SplitLedger, part: Part, batch: int, chunk: int) -> Verification:
    """Verify one partition, printing what differs and its summary."""
    with Meter("verify", ledger_length(part.client, Keys(part.namespace))) as meter:
        try:
            result = verify(part.client, part.namespace, batch=batch, chunk=chunk, progress=meter.update,
                            archive=found.archive)  # fmt: skip
        except FAILURES as exc:
            fail(f"verify failed{f' on partition {part.index}' if found.split else ''}: {exc}", code=3)
    for difference in result.differences:
        typer.echo(str(difference))
    span = _span(result.first, result.last)
    name = f"{found.label(part)}ledger '{found.partitioning.namespace}'"
    where = f"{name}: {result.keys:,} keys compared as of {span}; replayed {meter.summary()}"
    if result.ok:
        typer.echo(f"verified {where}: no difference")
    else:
        typer.echo(f"{len(result.differences)} of {result.keys:,} keys differ in {where}")
        if (hint := result.outdated_layout()) is not None:
            typer.echo(hint)
    return result


def _verify_blobs(config: Config, parts: list[Part]) -> bool:
    """``--blobs``: print each problem and a summary; whether there was none."""
    store = open_store(config.blobs, config.embedded.data_dir, config.redis.key_namespace)

    async def audit() -> BlobAudit:
        try:
            found = BlobAudit()
            for part in parts:
                each = await audit_blobs(part.client, part.namespace, store)
                found.checked, found.bytes = found.checked + each.checked, found.bytes + each.bytes
                found.problems += each.problems
            return found
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


app.command("drop")(drop_command)
