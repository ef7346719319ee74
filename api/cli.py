"""The ``jobledger`` command line.

Every command takes the same ``--config``, ``--data-dir``, ``--redis-url`` and ``--namespace``
options (each also read from its ``JOBLEDGER_*`` variable by :func:`api.config.load_config`), builds
its :class:`~api.config.Config` with :func:`make_config`, and finds Redis with :func:`open_redis`
(which refuses a data directory that holds no ledger, but for ``serve`` and ``events import``).
Command groups (replay, events, worker, queues...) are added to :func:`build_app` as typer sub-apps.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import signal
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType, TracebackType
from typing import Annotated, NoReturn, Self

import typer

from api import __version__, logs
from api.config import Config, ConfigError, load_config
from api.connection import NoLedgerHere, redis_url_for
from api.embedded import EmbeddedServerError

# The options every command shares.  Their environment variables are applied by load_config.
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", envvar="JOBLEDGER_CONFIG", dir_okay=False, help="TOML configuration file."),
]
DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        file_okay=False,
        help="Embedded server's data directory (env JOBLEDGER_DATA_DIR; default ./jobledger-data).",
    ),
]
RedisUrlOption = Annotated[
    str | None,
    typer.Option(
        "--redis-url",
        help="Use this Redis instead of the embedded server (env JOBLEDGER_REDIS_URL).",
    ),
]
NamespaceOption = Annotated[
    str | None,
    typer.Option("--namespace", help="Key namespace (env JOBLEDGER_NAMESPACE; default jobledger)."),
]
# Options of the background checks, shared by `serve` and `scheduler`.
TimeoutCheckOption = Annotated[
    str | None,
    typer.Option(help="How often to time out jobs, e.g. 30s (env JOBLEDGER_TIMEOUT_CHECK_INTERVAL)."),
]
RetryCheckOption = Annotated[
    str | None,
    typer.Option(help="How often to retry failed jobs, e.g. 1m (env JOBLEDGER_RETRY_CHECK_INTERVAL)."),
]
ExpiryCheckOption = Annotated[
    str | None,
    typer.Option(help="How often to expire ended jobs, e.g. 5m (env JOBLEDGER_EXPIRY_CHECK_INTERVAL)."),
]
LogFormatOption = Annotated[
    str | None,
    typer.Option(help="Log lines as text (default) or json, one object per line (env JOBLEDGER_LOG_FORMAT)."),
]


class StopRequested(BaseException):
    """SIGINT or SIGTERM arrived: unwind, stopping whatever this process started."""


class SignalStop:
    """Within ``with SignalStop():`` the first SIGINT / SIGTERM stops the command; repeats are ignored.

    By default the signal raises :class:`StopRequested`, which the ``with`` swallows after everything
    inside has been unwound (so an embedded server we started is stopped).  Inside :meth:`held` it
    is held back until the block ends; inside :meth:`redirect` it calls a callback instead, e.g. to
    cancel an asyncio task at an await point.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.fired = False
        self._held = False
        self._pending: int | None = None
        self._callback: Callable[[], object] | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> Self:
        self._previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        return exc_type is not None and issubclass(exc_type, StopRequested)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold a signal back until the block ends, so that what it starts is never half-started."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
        if self._pending is not None:
            raise StopRequested(self._pending)

    @contextmanager
    def redirect(self, callback: Callable[[], object]) -> Iterator[None]:
        """While inside, a signal calls ``callback`` rather than raising."""
        self._callback = callback
        try:
            yield
        finally:
            self._callback = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.fired:
            return
        self.fired = True
        if self._held:
            self._pending = signum
        elif self._callback is not None:
            self._callback()
        else:
            raise StopRequested(signum)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``jobledger: message`` on stderr and exit with ``code``."""
    typer.echo(f"jobledger: {message}", err=True)
    raise typer.Exit(code)


def make_config(
    config_path: Path | None,
    data_dir: Path | None,
    redis_url: str | None,
    namespace: str | None,
    flags: Mapping[str, object] | None = None,
) -> Config:
    """The configuration from the shared options plus a command's own ``flags`` (dotted keys)."""
    overrides = {
        "embedded.data_dir": data_dir,
        "redis.url": redis_url,
        "redis.key_namespace": namespace,
        **(flags or {}),
    }
    try:
        return load_config(config_path, overrides)
    except ConfigError as exc:
        fail(str(exc), code=2)


@contextmanager
def open_redis(config: Config, stop: SignalStop, *, create: bool = False) -> Iterator[str]:
    """:func:`redis_url_for`, with a signal held back while an embedded server starts (so it is
    never left running half-started) and its failures reported as a command-line error.  A data
    directory that holds no ledger is refused (exit 2) unless ``create``: only ``serve`` and
    ``events import`` start a new ledger."""
    with ExitStack() as stack:
        try:
            with stop.held():
                url = stack.enter_context(redis_url_for(config, create=create))
        except NoLedgerHere as exc:
            fail(str(exc), code=2)
        except EmbeddedServerError as exc:
            fail(f"embedded server: {exc}")
        yield url


def setup_logging(config: Config) -> None:
    """Logging as ``[server] log_level`` and ``log_format`` say (see :mod:`api.logs`)."""
    logs.configure(config.server.log_level, config.server.log_format)


async def run_scheduler(config: Config, redis_url: str, stop: SignalStop) -> None:
    """Run the scheduler until a signal stops it."""
    from ledger.scheduler import run_forever
    from ledger.tasks import cancel_and_wait

    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(run_forever(config, redis_url))
    stopping = asyncio.Event()
    with stop.redirect(lambda: loop.call_soon_threadsafe(stopping.set)):
        signalled = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([task, signalled], return_when=asyncio.FIRST_COMPLETED)
        await cancel_and_wait([task, signalled])  # a plain cancel can be lost (see ledger.tasks)
    if not stop.fired:
        task.result()  # the scheduler ended by itself: its error


def serve(
    config_path: ConfigOption = None,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
    namespace: NamespaceOption = None,
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
    timeout_check_interval: TimeoutCheckOption = None,
    retry_check_interval: RetryCheckOption = None,
    expiry_check_interval: ExpiryCheckOption = None,
    log_level: Annotated[str | None, typer.Option(help="error, warning, info, debug or trace.")] = None,
    log_format: LogFormatOption = None,
) -> None:
    """Run the HTTP server (and the embedded Redis server, unless a Redis URL is configured).

    The address is taken first: if it is in use, nothing starts (exit 3).  SIGTERM / SIGINT stop
    the server within shutdown_timeout; a second signal stops it at once."""
    config = make_config(config_path, data_dir, redis_url, namespace, {
        "server.host": host, "server.port": port, "server.read_only": read_only,
        "server.strict": strict, "server.scheduler": run_checks,
        "embedded.appendfsync": appendfsync, "server.max_body_size": max_body_size,
        "server.shutdown_timeout": shutdown_timeout, "server.next_job_delay": next_job_delay,
        "server.timeout_check_interval": timeout_check_interval,
        "server.retry_check_interval": retry_check_interval,
        "server.expiry_check_interval": expiry_check_interval, "server.log_level": log_level,
        "server.log_format": log_format,
    })  # fmt: skip
    setup_logging(config)
    from api.app import create_app  # imported only when serving
    from api.serving import ListenError, listen, run_http

    try:
        sockets = listen(config.server.host, config.server.port)
    except ListenError as exc:
        fail(str(exc), code=3)
    with ExitStack() as stack:
        for sock in sockets:
            stack.callback(sock.close)
        with SignalStop() as stop, open_redis(config, stop, create=True) as url:
            started = run_http(create_app(config, url), config, sockets)
            stop.fired = True  # the server has stopped: a late signal must not cut short the rest
            if not started:
                fail("the HTTP server did not start (see the messages above)", code=3)


def scheduler(
    config_path: ConfigOption = None,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
    namespace: NamespaceOption = None,
    timeout_check_interval: TimeoutCheckOption = None,
    retry_check_interval: RetryCheckOption = None,
    expiry_check_interval: ExpiryCheckOption = None,
    log_format: LogFormatOption = None,
) -> None:
    """Run the scheduler alone (timeouts, retries, expiry, releases, launchers) until stopped."""
    config = make_config(config_path, data_dir, redis_url, namespace, {
        "server.timeout_check_interval": timeout_check_interval,
        "server.retry_check_interval": retry_check_interval,
        "server.expiry_check_interval": expiry_check_interval, "server.log_format": log_format,
    })  # fmt: skip
    setup_logging(config)
    with SignalStop() as stop, open_redis(config, stop) as url:
        asyncio.run(run_scheduler(config, url, stop))


def version() -> None:
    """Print jobledger's version."""
    typer.echo(__version__)


def build_app() -> typer.Typer:
    """The ``jobledger`` typer app: its commands, and later its command groups as sub-apps."""
    app = typer.Typer(
        name="jobledger",
        help="A job queue server whose source of truth is an event ledger (Ocypod's HTTP API).",
        no_args_is_help=True,
        add_completion=False,
    )
    app.command()(serve)
    app.command()(scheduler)
    app.command()(version)
    # Command groups join here as sub-apps, e.g. app.add_typer(replay_app, name="replay").
    from api import cli_client, cli_worker  # here, not at the top: they import this module

    app.add_typer(cli_client.app)
    app.add_typer(cli_worker.app)
    from api import cli_events, cli_replay

    app.add_typer(cli_replay.app, name="replay")
    app.add_typer(cli_events.app, name="events")
    bench_app = _bench_app()
    if bench_app is not None:
        app.add_typer(bench_app)
    return app


def _bench_app() -> typer.Typer | None:
    """``jobledger bench``: tests/benchmarks, installed as jobledger_bench (the peers it measures
    beside ours are not installed), or imported from a source checkout run without installing."""
    for module in ("jobledger_bench.cli", "tests.benchmarks.cli"):
        with contextlib.suppress(ImportError):
            bench: typer.Typer = importlib.import_module(module).app
            return bench
    return None


def main() -> None:
    """Entry point of the ``jobledger`` console script."""
    build_app()()


if __name__ == "__main__":
    main()
