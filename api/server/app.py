"""The Starlette application: routes, error mapping, and the lifespan that owns the resources.

How a request becomes an event: a handler (``jobledger.server.*_handlers``) validates the body into a
``jobledger.ledger.requests`` model, builds a command (``jobledger.ledger.commands``) and runs it through
the ledger (``jobledger.ledger.partitioned``), which picks the partition the command's queue or job
lives in (the one partition, unless the ledger is split over a Cluster) and its ``OpeningLedger``
(``jobledger.ledger.runner``), which calls the command's Lua script (``ledger/lua``) with EVALSHA; the
script checks state, XADDs the event and applies it (``projections/lua/apply.lua``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from jobledger.blobs import BlobStore, open_store
from jobledger.blobs.archive import BlobArchive
from jobledger.blobs.guarded import GuardedStore
from jobledger.ledger import commands
from jobledger.ledger.errors import Conflict, NotFound, Unavailable
from jobledger.ledger.launcher_declarations import put
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import QueueSettings
from jobledger.ledger.tasks import cancel_and_wait
from jobledger.ledger.watch import LedgerWatch
from jobledger.replay.archive.writer import archive_settings
from jobledger.runtime import tracing
from jobledger.runtime.config import Config
from jobledger.scheduler import loop as scheduler
from jobledger.server import info_handlers as info
from jobledger.server import metrics
from jobledger.server.api_route import api_paths
from jobledger.server.bulk_runs import BulkRuns
from jobledger.server.errors import HANDLERS
from jobledger.server.feeds import FeedSlots
from jobledger.server.front_door import FrontDoor
from jobledger.server.inputs import IgnoredKeysHeader
from jobledger.server.routes import ROUTES
from jobledger.server.sealed_ledger import ServedLogs, served_seal
from jobledger.server.ui import routes as dashboard_routes
from jobledger.server.ui.verify_runs import VerifyRuns

log = logging.getLogger("jobledger.api")


def configured_queues(config: Config) -> dict[str, QueueSettings]:
    """``[queue.NAME]`` sections, validated now so a bad config stops the start."""
    return {name: QueueSettings.model_validate(raw) for name, raw in config.queue.items()}


def configured_launchers(config: Config) -> dict[str, LauncherSpec]:
    """``[launcher.NAME]`` sections (the configuration checked them when it was loaded)."""
    return {name: LauncherSpec.model_validate(raw) for name, raw in config.launcher.items()}


async def apply_declared(
    ledger: OpeningLedger, queues: dict[str, QueueSettings], launchers: dict[str, LauncherSpec]
) -> None:
    """Create or update the configured queues, then declare the configured launchers (a launcher
    declared as it was appends nothing), retrying while Redis is unreachable.  A launcher the ledger
    refuses (its queue does not exist) is logged, and the others are declared."""
    delay = 0.5
    while True:
        try:
            for name, settings in queues.items():
                await ledger.run(commands.put_queue(name, settings))
            for name, spec in launchers.items():
                try:
                    await ledger.run(put(name, spec, ledger.clock()))
                except (NotFound, Conflict) as exc:
                    log.error("configured launcher %s not declared: %s", name, exc.message)
            return
        except Unavailable as exc:
            log.warning("configured queues and launchers not applied yet: %s", exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10)


def served_names(config: Config) -> list[str]:
    """The Host names answered besides loopback ones: ``[server] allowed_hosts``, and the address
    ``serve`` listens on when it is one address (an address, unlike a name, cannot be rebound)."""
    host = config.server.host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return list(config.server.allowed_hosts)
    return [*config.server.allowed_hosts, *([] if address.is_unspecified else [str(address)])]


def request_spans(traced: bool) -> list[Middleware]:
    """The middleware that makes a span of each request, outermost (so that what the front door
    refuses is traced too): none, and OpenTelemetry not imported, when tracing is off."""
    if not traced:
        return []
    from jobledger.server.request_spans import RequestSpans

    return [Middleware(RequestSpans)]


def command_observer(metrics: Callable[[str, float], None], traced: bool) -> Callable[[str, float], None]:
    """What the runners call after each command: the metrics' observer, after a command's span when
    tracing is on."""
    if not traced:
        return metrics
    from jobledger.server.request_spans import CommandSpans

    return CommandSpans(then=metrics).observe


def create_app(
    config: Config, redis_url: str, *, run_scheduler: bool = True, blobs: BlobStore | None = None
) -> Starlette:
    """The application for one ledger.  ``run_scheduler=False`` leaves the checks to someone else.
    The blob store is the configuration's ``[blobs]``, opened at startup and closed at shutdown,
    unless ``blobs`` gives one (which its giver closes)."""
    read_only = config.server.read_only
    queues, declared = configured_queues(config), configured_launchers(config)
    run_scheduler = run_scheduler and config.server.scheduler
    server = config.server

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        store = (
            blobs
            if blobs is not None
            else open_store(config.blobs, config.embedded.data_dir, config.redis.key_namespace)
        )
        # the archive every server's history reads
        archive = BlobArchive.over(store, config.embedded.data_dir, config.redis.key_namespace)
        namespace, partitions, observe = (
            config.redis.key_namespace,
            config.redis.partitions,
            command_observer(app.state.metrics.observe, traced),
        )
        ledger = OpeningLedger(redis_url, namespace, partitions, observe=observe)  # the requests'
        # the scheduler's, the follower's and the probes': no load on the requests' pool starves them
        background = OpeningLedger(redis_url, namespace, partitions, observe=observe)
        watch = LedgerWatch(background)
        tasks = []
        checks: scheduler.SchedulerState | None = None  # what /ready asks of this server's scheduler
        seal = served_seal(config, create=run_scheduler and not read_only)
        if not read_only:
            tasks.append(asyncio.create_task(apply_declared(ledger, queues, declared)))
            if run_scheduler:
                checks = scheduler.SchedulerState()
                every, retention = scheduler.intervals(config), archive_settings(config, archive)
                sweep, seal = scheduler.blob_sweep(config, store), scheduler.seal_settings(config)
                run = scheduler.run(background, every, retention, watch=watch, state=checks, blobs=sweep,
                                    seal=seal)  # fmt: skip
                task = asyncio.create_task(run)
                task.add_done_callback(checks.ended)
                tasks.append(task)
        bulk_runs = BulkRuns()  # the bulk operations this server runs in the background
        try:
            guarded = GuardedStore(store, ledger)  # what requests store and look up tells the collector
            yield {
                "ledger": ledger,
                "background": background,
                "watch": watch,
                "scheduler": checks,
                "blobs": guarded,
                "sealed": None if seal is None else ServedLogs(seal, namespace, archive),
                "archive": archive,
                "feeds": FeedSlots(server.max_feeds_per_token, server.max_feeds, app.state.metrics.feeds.set),
                "probes": asyncio.Semaphore(info.PROBES),  # /health and /ready asking Redis at once
                "bulk_runs": bulk_runs,
            }
        finally:
            await bulk_runs.close()
            await cancel_and_wait(
                tasks
            )  # a plain cancel can be lost mid-command (see jobledger.ledger.tasks)
            await app.state.verify_runs.close()
            await watch.close()
            await ledger.aclose()
            await background.aclose()
            if blobs is None:
                await store.close()

    traced = tracing.wanted(config.tracing.enabled)
    routes: list[BaseRoute] = [*api_paths(ROUTES, read_only, config.server.auth), *dashboard_routes()]
    app = Starlette(routes=routes, exception_handlers=HANDLERS, lifespan=lifespan,  # type: ignore[arg-type]
                    middleware=[*request_spans(traced),
                                Middleware(FrontDoor, auth=config.server.auth,  # type: ignore[arg-type]
                                           allowed_hosts=served_names(config)),
                                Middleware(IgnoredKeysHeader)])  # fmt: skip
    app.state.metrics = metrics.Metrics()
    app.state.strict = config.server.strict
    app.state.auth = config.server.auth  # /openapi.json describes the token check when on
    app.state.read_only = read_only
    app.state.verify_runs = VerifyRuns(redis_url, config.redis.key_namespace)  # the dashboard's runs
    app.state.stopping = asyncio.Event()  # set by serve at its first signal: long-polls end at once
    app.state.max_body_size = config.server.max_body_size
    app.state.next_job_delay = config.server.next_job_delay
    app.state.idempotency_window = config.server.idempotency_window
    return app
