"""``jobledger serve``, ``jobledger scheduler`` and ``jobledger version``."""

from __future__ import annotations

import asyncio
import ipaddress
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from jobledger.cli.common import (
    LEDGER_DEFAULTS,
    ArchiveAfterOption,
    ExpiryCheckOption,
    LedgerOptions,
    LogFormatOption,
    LogLevelOption,
    PartitionsOption,
    RetryCheckOption,
    SignalStop,
    TimeoutCheckOption,
    check_partitions,
    fail,
    ledger_options,
    open_redis,
    setup_logging,
    start_tracing,
)
from jobledger.runtime.config import Config, ConfigError
from jobledger.runtime.startup import started
from jobledger.runtime.version import version as installed_version


async def run_scheduler(config: Config, redis_url: str, stop: SignalStop) -> None:
    """Run the scheduler until a signal stops it."""
    from jobledger.ledger.tasks import cancel_and_wait
    from jobledger.scheduler.loop import run_forever

    started()
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(run_forever(config, redis_url))
    stopping = asyncio.Event()
    with stop.redirect(lambda: loop.call_soon_threadsafe(stopping.set)):
        signalled = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([task, signalled], return_when=asyncio.FIRST_COMPLETED)
        await cancel_and_wait([task, signalled])  # a plain cancel can be lost (see jobledger.ledger.tasks)
    if not stop.fired:
        task.result()  # the scheduler ended by itself: its error


def loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_refusal(config: Config) -> str | None:
    """Why ``serve`` will not start as configured, or None: a half-given TLS pair, or an address
    other than loopback with auth off and no ``--insecure``."""
    server = config.server
    if (server.tls_cert is None) != (server.tls_key is None):
        return "--tls-cert and --tls-key go together: give both (or neither)"
    if server.auth or server.insecure or loopback(server.host):
        return None
    return (
        f"refusing to serve {server.host} without auth: anyone who can reach it could create, "
        "change and delete jobs.  Turn auth on (--auth, and jobledger token create), listen on "
        "127.0.0.1, or pass --insecure if the network itself is trusted"
    )


@ledger_options
def serve(
    ledger: LedgerOptions = LEDGER_DEFAULTS,
    host: Annotated[str | None, typer.Option(help="Address to listen on (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default 8023).")] = None,
    read_only: Annotated[
        bool | None, typer.Option("--read-only/--read-write", help="Refuse every write.")
    ] = None,
    strict: Annotated[
        bool | None,
        typer.Option("--strict/--lenient", help="Refuse unknown body keys (400) rather than ignore them."),
    ] = None,
    run_checks: Annotated[
        bool | None,
        typer.Option("--scheduler/--no-scheduler", help="Run the scheduler's checks here (default) or not."),
    ] = None,
    appendfsync: Annotated[
        str | None, typer.Option(help="Embedded server's fsync: everysec (default) or always.")
    ] = None,
    max_body_size: Annotated[str | None, typer.Option(help="Largest request body, e.g. 256KiB.")] = None,
    shutdown_timeout: Annotated[str | None, typer.Option(help="Graceful shutdown limit, e.g. 30s.")] = None,
    next_job_delay: Annotated[str | None, typer.Option(help="Ocypod's next_job_delay, e.g. 0s.")] = None,
    idempotency_window: Annotated[
        str | None, typer.Option(help="How long a create's Idempotency-Key is remembered, e.g. 24h.")
    ] = None,
    max_feeds_per_token: Annotated[
        int | None, typer.Option(help="Live feeds one token may hold open (default 20).")
    ] = None,
    max_feeds: Annotated[
        int | None, typer.Option(help="Live feeds this server serves at once (default 500).")
    ] = None,
    auth: Annotated[
        bool | None,
        typer.Option("--auth/--no-auth", help="Want a bearer token on every route but /health and /ready."),
    ] = None,
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Serve an address other than loopback without --auth.")
    ] = False,
    tls_cert: Annotated[Path | None, typer.Option(help="Serve HTTPS with this certificate (PEM).")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="The private key of --tls-cert (PEM).")] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            metavar="HOST", help="A host name answered besides loopback ones (repeatable; *.example.com)."
        ),
    ] = None,
    timeout_check_interval: TimeoutCheckOption = None,
    retry_check_interval: RetryCheckOption = None,
    expiry_check_interval: ExpiryCheckOption = None,
    archive_after: ArchiveAfterOption = None,
    log_level: LogLevelOption = None,
    log_format: LogFormatOption = None,
    partitions: PartitionsOption = None,
) -> None:
    """Run the HTTP server (and the embedded Redis server, unless a Redis URL is configured).

    The address is taken first: if it is in use, nothing starts (exit 3); a partition count other
    than the ledger's stored one starts nothing either (exit 2).  SIGTERM / SIGINT stop
    the server within shutdown_timeout; a second signal stops it at once."""
    config = ledger.config({
        "server.host": host, "server.port": port, "server.read_only": read_only,
        "server.strict": strict, "server.scheduler": run_checks,
        "embedded.appendfsync": appendfsync, "server.max_body_size": max_body_size,
        "server.shutdown_timeout": shutdown_timeout, "server.next_job_delay": next_job_delay,
        "server.idempotency_window": idempotency_window,
        "server.max_feeds_per_token": max_feeds_per_token, "server.max_feeds": max_feeds,
        "server.timeout_check_interval": timeout_check_interval,
        "server.retry_check_interval": retry_check_interval,
        "server.expiry_check_interval": expiry_check_interval, "server.log_level": log_level,
        "server.log_format": log_format, "server.auth": auth, "server.insecure": insecure or None,
        "server.tls_cert": tls_cert, "server.tls_key": tls_key, "redis.partitions": partitions,
        "server.allowed_hosts": allowed_host or None, "ledger.archive_after": archive_after,
    })  # fmt: skip
    refusal = exposure_refusal(config)
    if refusal:
        fail(refusal, code=2)
    setup_logging(config)
    config, flush_spans = start_tracing(config, "jobledger")
    from jobledger.server.app import create_app  # imported only when serving
    from jobledger.server.serving import ListenError, listen, run_http, tls_problem

    if config.server.tls_cert is not None and config.server.tls_key is not None:
        problem = tls_problem(config.server.tls_cert, config.server.tls_key)
        if problem:
            fail(problem, code=2)

    if config.redis.url:  # the embedded server is found (or started) after the address is taken
        check_partitions(config, config.redis.url)
    try:
        sockets = listen(config.server.host, config.server.port)
    except ListenError as exc:
        fail(str(exc), code=3)
    with ExitStack() as stack:
        stack.callback(flush_spans)
        for sock in sockets:
            stack.callback(sock.close)
        with SignalStop() as stop, open_redis(config, stop, create=True) as url:
            if not config.redis.url:
                check_partitions(config, url)
            try:
                app = create_app(config, url, listening=asyncio.Event())  # the warm-up waits for it
            except ConfigError as exc:  # a [queue.*] or [launcher.*] section its model refuses
                fail(f"configuration: {exc}", code=2)
            started()
            served = run_http(app, config, sockets)
            stop.fired = True  # the server has stopped: a late signal must not cut short the rest
            if not served:
                fail("the HTTP server did not start (see the messages above)", code=3)


@ledger_options
def scheduler(
    ledger: LedgerOptions = LEDGER_DEFAULTS,
    timeout_check_interval: TimeoutCheckOption = None,
    retry_check_interval: RetryCheckOption = None,
    expiry_check_interval: ExpiryCheckOption = None,
    archive_after: ArchiveAfterOption = None,
    log_level: LogLevelOption = None,
    log_format: LogFormatOption = None,
    partitions: PartitionsOption = None,
) -> None:
    """Run the scheduler alone (timeouts, retries, expiry, releases, launchers) until stopped."""
    config = ledger.config({
        "server.timeout_check_interval": timeout_check_interval,
        "server.retry_check_interval": retry_check_interval,
        "server.expiry_check_interval": expiry_check_interval, "server.log_level": log_level,
        "server.log_format": log_format, "redis.partitions": partitions,
        "ledger.archive_after": archive_after,
    })  # fmt: skip
    setup_logging(config)
    with SignalStop() as stop, open_redis(config, stop) as url:
        check_partitions(config, url)
        asyncio.run(run_scheduler(config, url, stop))


def version() -> None:
    """Print jobledger's version."""
    typer.echo(installed_version())
