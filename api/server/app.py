"""The Starlette application: routes, error mapping, and the lifespan that owns the resources.

How a request becomes an event: a handler (``jobledger.server.*_handlers``) validates the body into a
``jobledger.ledger.requests`` model, builds a command (``jobledger.ledger.commands``) and runs it through
the ledger (``jobledger.ledger.partitioned``), which picks the partition the command's queue or job
lives in (the one partition, unless the ledger is split over a Cluster) and its ``OpeningLedger``
(``jobledger.ledger.runner``), which calls the command's Lua script (``ledger/lua``) with FCALL; the
script checks state, XADDs the event and applies it (``projections/lua/apply.lua``).

Building the app and starting its lifespan load only what ``/ready`` needs (the router with its
endpoints named, not imported; the runners; the probes): the handlers and their models, the
scheduler's loop and its sealer, the dashboard's pages and prometheus_client load in the warm-up
(:mod:`jobledger.server.warmup`) once the server is ready, so that a restart answers sooner; the
archive, the sealed ledger's logs and the bulk runs are made on first use
(:mod:`jobledger.server.deferred_parts`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from jobledger.blobs import BlobStore, open_store
from jobledger.blobs.guarded import GuardedStore
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.tasks import cancel_and_wait
from jobledger.ledger.watch import LedgerWatch
from jobledger.runtime import tracing
from jobledger.runtime.config import Config, ConfigError
from jobledger.scheduler.state import SchedulerState
from jobledger.server import info_handlers as info
from jobledger.server.api_route import api_paths
from jobledger.server.auth import KnownJobs, KnownTokens
from jobledger.server.deferred_parts import DeferredParts
from jobledger.server.errors import HANDLERS
from jobledger.server.feeds import FeedSlots
from jobledger.server.front_door import FrontDoor
from jobledger.server.inputs import IgnoredKeysHeader
from jobledger.server.process_metrics import ProcessMetrics
from jobledger.server.routes import ROUTES
from jobledger.server.ui import routes as dashboard_routes
from jobledger.server.ui.verify_runs import VerifyRuns
from jobledger.server.warmup import Warmup

if TYPE_CHECKING:
    from jobledger.ledger.launchers import LauncherSpec
    from jobledger.ledger.requests import QueueSettings

log = logging.getLogger("jobledger.api")

#: Seconds a start waits for the configured queues and launchers before it serves (they are applied
#: later, and /ready says so, when Redis does not answer by then).
DECLARE_WAIT = 5.0


def configured_queues(config: Config) -> dict[str, QueueSettings]:
    """``[queue.NAME]`` sections, validated now so a bad config stops the start (their model is
    loaded only when there are any); a :class:`ConfigError` naming the section and its fields."""
    if not config.queue:
        return {}
    from jobledger.ledger.requests import QueueSettings

    found: dict[str, QueueSettings] = {}
    for name, section in config.queue.items():
        try:
            found[name] = QueueSettings.model_validate(section)
        except ValueError as exc:  # pydantic's ValidationError is one
            raise ConfigError(f"[queue.{name}] {_problems(exc)}") from None
    return found


def configured_launchers(config: Config) -> dict[str, LauncherSpec]:
    """``[launcher.NAME]`` sections, validated now so a bad one stops the start (their models are
    loaded only when the configuration has any)."""
    if not config.launcher:
        return {}
    from jobledger.ledger.launcher_declarations import check_name
    from jobledger.ledger.launchers import LauncherSpec

    found: dict[str, LauncherSpec] = {}
    for name, section in config.launcher.items():
        try:
            check_name(name)
            found[name] = LauncherSpec.model_validate(section)
        except ValueError as exc:  # pydantic's ValidationError is one
            raise ConfigError(f"[launcher.{name}] {_problems(exc)}") from None
    return found


def _problems(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'section'}: {e['msg']}" for e in errors())


async def apply_declared(
    ledger: OpeningLedger,
    queues: dict[str, QueueSettings],
    launchers: dict[str, LauncherSpec],
    applied: asyncio.Event,
) -> None:
    """Create or update the configured queues, then declare the configured launchers (a launcher
    declared as it was appends nothing), retrying while Redis is unreachable.  A launcher the ledger
    refuses (its queue does not exist) is logged, and the others are declared.  ``applied`` is set
    then: ``/ready`` waits for it, so that a worker or a producer started on readiness finds the
    configured queues.  (A configuration with such sections loads the commands at once, before the
    warm-up: the server's start waits a moment for them, as Ocypod creates its queues before it
    serves.)"""
    from jobledger.ledger import commands
    from jobledger.ledger.errors import Conflict, NotFound
    from jobledger.ledger.launcher_declarations import put

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
            applied.set()
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


async def warm_up(warmup: Warmup, metrics: ProcessMetrics) -> None:
    """The warm-up, then the metrics' registry built (on the loop: see ProcessMetrics)."""
    await warmup.run()
    metrics.build()


async def run_checks(
    config: Config,
    background: OpeningLedger,
    watch: LedgerWatch,
    state: SchedulerState,
    parts: DeferredParts,
    warmup: Warmup,
) -> None:
    """The scheduler of this server, with the sealer, from its first round once the warm-up has
    loaded it."""
    await warmup.module("jobledger.scheduler.loop")
    await warmup.module("jobledger.replay.archive.writer")
    from jobledger.replay.archive.writer import archive_settings
    from jobledger.scheduler import loop as scheduler

    sealed = parts.sealed  # the signing key made, if this is the ledger's first sealing server
    every, retention = scheduler.intervals(config), archive_settings(config, parts.archive)
    sweep, seal = scheduler.blob_sweep(config, parts.store), None if sealed is None else sealed.settings
    await scheduler.run(background, every, retention, watch=watch, state=state, blobs=sweep, seal=seal)


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
    config: Config,
    redis_url: str,
    *,
    run_scheduler: bool = True,
    blobs: BlobStore | None = None,
    listening: asyncio.Event | None = None,
) -> Starlette:
    """The application for one ledger.  ``run_scheduler=False`` leaves the checks to someone else.
    The blob store is the configuration's ``[blobs]``, opened at startup and closed at shutdown,
    unless ``blobs`` gives one (which its giver closes).  The warm-up (:mod:`jobledger.server.warmup`)
    starts once ``listening`` is set (by ``serve``, as uvicorn listens), at once without it."""
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
        process: ProcessMetrics = app.state.metrics
        namespace, partitions = config.redis.key_namespace, config.redis.partitions
        observe = command_observer(process.observe, traced)
        ledger = OpeningLedger(redis_url, namespace, partitions, observe=observe)  # the requests'
        # the scheduler's, the follower's and the probes': no load on the requests' pool starves them
        background = OpeningLedger(redis_url, namespace, partitions, observe=observe)
        watch = LedgerWatch(background)
        warmup = Warmup(listening, lambda: info.ping(background), lambda: info.load_functions(background))
        tasks = [asyncio.create_task(warm_up(warmup, process))]
        checks: SchedulerState | None = None  # what /ready asks of this server's scheduler
        applied: asyncio.Event | None = None  # set once configured queues and launchers are applied
        parts = DeferredParts(config, store, seals=run_scheduler and not read_only)
        if not read_only:
            if queues or declared:
                applied = asyncio.Event()
                tasks.append(asyncio.create_task(apply_declared(ledger, queues, declared, applied)))
            if run_scheduler:
                checks = SchedulerState()
                task = asyncio.create_task(run_checks(config, background, watch, checks, parts, warmup))
                task.add_done_callback(checks.ended)
                tasks.append(task)
        try:
            if applied is not None:
                with contextlib.suppress(TimeoutError):  # Redis down: they are applied once it is up
                    await asyncio.wait_for(applied.wait(), DECLARE_WAIT)
            guarded = GuardedStore(store, ledger)  # what requests store and look up tells the collector
            yield {
                "ledger": ledger,
                "background": background,
                "watch": watch,
                "scheduler": checks,
                "declared": applied,
                "blobs": guarded,
                "feeds": FeedSlots(server.max_feeds_per_token, server.max_feeds, process.feeds_open),
                "parts": parts,
                "tokens": KnownTokens(),
                "job_queues": KnownJobs(),
                "probes": asyncio.Semaphore(info.PROBES),  # /health and /ready asking Redis at once
            }
        finally:
            await parts.close()
            await cancel_and_wait(
                tasks
            )  # a plain cancel can be lost mid-command (see jobledger.ledger.tasks)
            await warmup.aclose()  # before the connections it may be pinging on close
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
    app.state.metrics = ProcessMetrics()
    app.state.strict = config.server.strict
    app.state.auth = config.server.auth  # /openapi.json describes the token check when on
    app.state.read_only = read_only
    app.state.verify_runs = VerifyRuns(redis_url, config.redis.key_namespace)  # the dashboard's runs
    app.state.stopping = asyncio.Event()  # set by serve at its first signal: long-polls end at once
    app.state.listening = listening  # set by serve once uvicorn listens: the warm-up starts
    app.state.max_body_size = config.server.max_body_size
    app.state.next_job_delay = config.server.next_job_delay
    app.state.idempotency_window = config.server.idempotency_window
    return app
