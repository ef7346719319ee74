"""``jobledger events``: the ledger itself.

- ``export --to FILE.jsonl [--until ID|TIME]`` and ``import FILE.jsonl`` move a whole ledger (archived
  events included) to a JSON-lines file and into an empty namespace, ids and bytes unchanged; they
  talk to Redis, found by the shared options (``--namespace`` names the ledger read or written).
  ``--blobs DIR`` carries the blobs the events refer to (:mod:`jobledger.replay.blob_transfer`).
  A ledger split into partitions is exported whole, each event naming its partition, and imported
  only into a ledger of as many partitions (the one stored, else ``[redis] partitions``, else the
  file's), each event into its partition; another count is refused before anything is written.
- ``tail [--type T] [--queue Q] [--job ID] [--actor A] [--after ID]`` follows a server's event feed
  over HTTP (``--url`` / ``$JOBLEDGER_URL``): one line per event, who caused it included, as it
  happens, until interrupted; quiet
  spells of any length keep it waiting (the server's keep-alives), a lost connection is made
  again, resuming after the last event shown (the feed's own position, which on a ledger split into
  partitions names a position in each).

Exit codes: 0 done (tail: interrupted by Ctrl-C); 1 the server refused or failed (tail: after its
retries, with the server's message on one line); 2 bad usage; 3 the run could not be done (e.g. a
non-empty namespace, a file that is not an export); 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated

import redis
import typer
from rich.text import Text

from jobledger.blobs import BlobError, BlobStore, open_store
from jobledger.cli.common import (
    LEDGER_DEFAULTS,
    LedgerOptions,
    SignalStop,
    fail,
    ledger_options,
)
from jobledger.cli.job_commands import UrlOption, connected
from jobledger.cli.output import EVENT_STYLES, JsonOption, Output, event_details, when
from jobledger.cli.replay_commands import ledger_parts, removed_unless_done, until_ids
from jobledger.client import Event
from jobledger.ledger.event_lines import LedgerFileError, count_lines, file_partitions, read_entries
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning
from jobledger.projections.archive import ArchiveError
from jobledger.replay.blob_transfer import (
    BlobTransferError,
    Carried,
    EventBlobs,
    event_blobs,
    export_blobs,
    import_blobs,
)
from jobledger.replay.parts import ensure_empty_ledger, mark, parts_of, stored_count
from jobledger.replay.progress import Meter
from jobledger.replay.rebuild import NamespaceNotEmpty, UnknownEventType
from jobledger.replay.source import ledger_length
from jobledger.replay.transfer import export_parts, import_parts
from jobledger.runtime.config import Config

app = typer.Typer(name="events", help="The ledger itself: export, import, and follow its events.",
                  no_args_is_help=True)  # fmt: skip

BlobsOption = Annotated[
    Path | None,
    typer.Option(
        "--blobs",
        metavar="DIR",
        file_okay=False,
        help="Carry the blobs the events refer to in DIR (laid out as a local blob store).",
    ),
]
FAILURES = (NamespaceNotEmpty, ArchiveError, UnknownEventType, LedgerFileError, redis.RedisError, OSError)


@app.command("export")
@ledger_options
def export_command(
    to: Annotated[Path, typer.Option("--to", dir_okay=False, help="The JSON-lines file to write.")],
    until: Annotated[
        str | None, typer.Option(metavar="ID|TIME", help="Last event id to export (or an RFC 3339 time).")
    ] = None,
    blobs: BlobsOption = None,
    ledger: LedgerOptions = LEDGER_DEFAULTS,
) -> None:
    """Write the ledger to a file, one JSON event per line (archived events included); with
    ``--blobs DIR``, the blobs its events refer to into DIR, each verified."""
    config = ledger.config()
    ns = config.redis.key_namespace
    with SignalStop() as stop, ledger_parts(config, stop) as found:
        untils = until_ids(found, until)
        total = sum(ledger_length(part.client, Keys(part.namespace)) for part in found.parts)
        with Meter("export", total) as meter:
            try:
                export_parts(found.parts, to, untils, progress=meter.update, archive=found.archive)
            except FAILURES as exc:
                fail(f"export failed: {exc}", code=3)
        split = f" ({found.partitioning.count} partitions)" if found.split else ""
        typer.echo(f"exported {meter.summary()} from ledger '{ns}'{split} to {to}")
        if blobs is not None and not stop.fired:
            carried = _carry(config, to, lambda refs, store: export_blobs(refs, store, blobs))
            typer.echo(f"exported {_carried(carried)} to {blobs}")
    if stop.fired:
        fail(f"interrupted; {to} was not written", code=130)


def _carry(
    config: Config, events: Path, work: Callable[[EventBlobs, BlobStore], Awaitable[Carried]]
) -> Carried:
    """Carry the blobs the events of the file refer to, to or from the configured store; a failure
    exits 3."""
    store = open_store(config.blobs, config.embedded.data_dir, config.redis.key_namespace)

    async def run() -> Carried:
        try:
            return await work(event_blobs(read_entries(events)), store)
        finally:
            await store.close()

    try:
        return asyncio.run(run())
    except (BlobTransferError, BlobError, LedgerFileError, OSError) as exc:
        fail(f"blobs: {exc}", code=3)


def _carried(carried: Carried) -> str:
    text = f"{carried.copied:,} blobs ({carried.bytes:,} bytes, each verified)"
    if carried.present:
        text += f", {carried.present:,} already there"
    if carried.skipped:
        text += f", {carried.skipped:,} named only by jobs gone and no longer stored"
    return text


@app.command("import")
@ledger_options
def import_command(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A file of events export.")],
    blobs: BlobsOption = None,
    ledger: LedgerOptions = LEDGER_DEFAULTS,
) -> None:
    """Load an exported ledger into an empty namespace: same ids, events applied; with ``--blobs
    DIR``, first the blobs its events refer to from DIR into the store, each verified."""
    config = ledger.config()
    ns = config.redis.key_namespace
    try:
        count = file_partitions(file)
    except OSError as exc:
        fail(f"import failed: {exc}", code=3)
    with SignalStop() as stop, ledger_parts(config, stop, create=True) as found:
        stored = stored_count(found.base, ns)
        wanted = stored or config.redis.partitions or count
        if wanted != count:
            fail(
                f"{file} holds a ledger of {count} partition(s); namespace '{ns}' is "
                f"{'split' if stored else 'to be split'} into {wanted}: import it into a ledger of "
                f"{count} (nothing was written)",
                code=3,
            )
        into = Partitioning(ns, count)
        with parts_of(found.url, into) as parts:
            try:
                ensure_empty_ledger(parts)
            except NamespaceNotEmpty as exc:
                fail(str(exc), code=3)
            if blobs is not None:
                carried = _carry(config, file, lambda refs, store: import_blobs(refs, blobs, store))
                typer.echo(f"imported {_carried(carried)} from {blobs}")
            with removed_unless_done(found.base, ns, parts), Meter("import", count_lines(file)) as meter:
                try:
                    mark(found.url, parts, into)
                    import_parts(parts, file, progress=meter.update)
                except FAILURES as exc:
                    fail(f"import failed (namespace '{ns}' left empty): {exc}", code=3)
        split = f" ({count} partitions)" if count > 1 else ""
        typer.echo(f"imported {meter.summary()} into namespace '{ns}'{split}")
    if stop.fired:
        fail(f"interrupted; namespace '{ns}' was left empty", code=130)


def print_event(out: Output, event: Event) -> None:
    """One event on one line: when, its type, job and queue, who caused it (its actor), what its
    data says (durations and times formatted), and its id (for ``--after``).  Coloured on a
    terminal; tab-separated when piped; the event as the server sent it with ``--json``."""
    item = event.model_dump(mode="json")
    if out.is_json:
        typer.echo(json.dumps(item, separators=(",", ":"), ensure_ascii=False))
        return
    plain = out.mode == "plain"
    details = event_details(event.data, plain)
    if plain:
        job = str(event.job) if event.job is not None else ""
        fields = [when(event.at, plain), event.type, event.queue or "", job, event.actor, details, event.id]
        typer.echo("\t".join(fields))
        return
    line = Text.assemble(
        (when(event.at, plain), "dim"), " ", (event.type, EVENT_STYLES.get(event.type, "")),
        f" job {event.job}" if event.job is not None else "", " ", (event.queue or "", "bold"),
        " ", (f"by {event.actor}", "cyan"), " ", details, " ", (event.id, "dim"),
    )  # fmt: skip
    out.console.print(line, soft_wrap=True)


@app.command("tail")
def tail_command(
    type_: Annotated[str | None, typer.Option("--type", help="Only events of this type.")] = None,
    queue: Annotated[str | None, typer.Option(help="Only events of this queue.")] = None,
    job: Annotated[int | None, typer.Option(min=1, help="Only events of this job.")] = None,
    actor: Annotated[
        str | None,
        typer.Option(help="Only events this actor caused (a token's name, local, scheduler, launcher:ID)."),
    ] = None,
    after: Annotated[
        str | None,
        typer.Option(
            help="Start after this event id (default: from now on). On a ledger split into partitions, "
            "an event id is that moment in every partition; a position the feed gave is exact."
        ),
    ] = None,
    url: UrlOption = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Follow the server's events as they happen, until interrupted."""
    out = Output(as_json)
    try:
        with connected(url) as client:
            for event in client.follow(after, type=type_, queue=queue, job=job, actor=actor):
                print_event(out, event)
    except KeyboardInterrupt:
        return
