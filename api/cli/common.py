"""What every ``jobledger`` command shares: the options, stopping on signals, the configuration,
finding Redis, logging.

Every command that reaches the ledger takes the same ``--config``, ``--data-dir``, ``--redis-url``
and ``--namespace`` options (each also read from its ``JOBLEDGER_*`` variable by
:func:`jobledger.runtime.config.load_config`) as one :class:`LedgerOptions` parameter (see
:func:`ledger_options`), builds its :class:`~jobledger.runtime.config.Config` with
:meth:`LedgerOptions.config`, and finds Redis with :func:`open_redis` (which refuses a data directory
that holds no ledger, but for ``serve`` and ``events import``).
"""

from __future__ import annotations

import functools
import inspect
import logging
import signal
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType, TracebackType
from typing import Annotated, Any, NoReturn, Self, TypeVar

import redis
import typer

from jobledger.ledger.partitions import CLUSTER_PARTITIONS, PartitionCountMismatch, settle
from jobledger.ledger.redis_clients import sync_client
from jobledger.ledger.slot_routing import on_cluster
from jobledger.runtime import logs, tracing
from jobledger.runtime.config import Config, ConfigError, TracingConfig, load_config
from jobledger.runtime.embedded import EmbeddedServerError
from jobledger.runtime.locate import NoLedgerHere, redis_url_for

log = logging.getLogger("jobledger.cli")

R = TypeVar("R")

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
ArchiveAfterOption = Annotated[
    str | None,
    typer.Option(
        help="Archive events older than this into the blob store and trim them from Redis (default 7d;"
        " 0s keeps every event in Redis; env JOBLEDGER_ARCHIVE_AFTER)."
    ),
]
PartitionsOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Partitions a new ledger is split into (env JOBLEDGER_PARTITIONS; default 16 on a Cluster, "
        "1 otherwise); a ledger keeps the count it was made with.",
    ),
]
LogLevelOption = Annotated[
    str | None, typer.Option(help="error, warning, info, debug or trace (env JOBLEDGER_LOG_LEVEL).")
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


@dataclass(frozen=True)
class LedgerOptions:
    """The options that say where the ledger is; a command takes them as one parameter of this type,
    which :func:`ledger_options` shows typer as the four options."""

    config_path: Path | None = None
    data_dir: Path | None = None
    redis_url: str | None = None
    namespace: str | None = None

    def config(self, flags: Mapping[str, object] | None = None) -> Config:
        """The configuration from these options plus a command's own ``flags`` (dotted keys)."""
        overrides = {
            "embedded.data_dir": self.data_dir,
            "redis.url": self.redis_url,
            "redis.key_namespace": self.namespace,
            **(flags or {}),
        }
        try:
            return load_config(self.config_path, overrides)
        except ConfigError as exc:
            fail(str(exc), code=2)


#: A command's LedgerOptions parameter defaults to this: no option given.
LEDGER_DEFAULTS = LedgerOptions()

_LEDGER_OPTIONS = (
    ("config_path", ConfigOption),
    ("data_dir", DataDirOption),
    ("redis_url", RedisUrlOption),
    ("namespace", NamespaceOption),
)


def ledger_options(command: Callable[..., R]) -> Callable[..., R]:
    """``command`` as typer should see it: its :class:`LedgerOptions` parameter is shown as the four
    options, in its place, and the command is called with them gathered into one LedgerOptions."""
    signature = inspect.signature(command, eval_str=True)
    (name,) = (p.name for p in signature.parameters.values() if p.annotation is LedgerOptions)
    shown: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name == name:
            shown += (
                parameter.replace(name=option, default=None, annotation=annotation)
                for option, annotation in _LEDGER_OPTIONS
            )
        else:
            shown.append(parameter)

    @functools.wraps(command)
    def gathering(**given: Any) -> R:
        options = LedgerOptions(*(given.pop(option) for option, _ in _LEDGER_OPTIONS))
        return command(**given, **{name: options})

    gathering.__signature__ = signature.replace(parameters=shown)  # type: ignore[attr-defined]
    return gathering


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


def check_partitions(config: Config, url: str) -> None:
    """Settle the ledger's partition count (the stored one, or, for a new ledger, the configured
    one, stored now) and exit 2 when ``[redis] partitions`` asks for another than the stored one.
    Redis out of reach is left to the command (a server starts anyway, and opens the ledger later)."""
    namespace = config.redis.key_namespace
    try:
        client = sync_client(url, namespace)
    except (redis.RedisError, OSError):
        return
    try:
        default = CLUSTER_PARTITIONS if on_cluster(client) else 1
        settle(client, namespace, config.redis.partitions, default)
    except PartitionCountMismatch as exc:
        fail(exc.message, code=2)
    except (redis.RedisError, OSError):
        return
    finally:
        client.close()


def setup_logging(config: Config) -> None:
    """Logging as ``[server] log_level`` and ``log_format`` say (see :mod:`jobledger.runtime.logs`)."""
    logs.configure(config.server.log_level, config.server.log_format)


def start_tracing(config: Config, service: str) -> tuple[Config, Callable[[], None]]:
    """Set up OpenTelemetry when tracing is on (:mod:`jobledger.runtime.tracing`): the configuration
    with ``[tracing] enabled`` settled (true: tracing, false: not), and the function that flushes the
    spans, to call as the command ends.  Asked for by ``[tracing] enabled`` but not to be had (the
    extra or an exporter missing): exit 2.  Asked for by the environment alone (which other programs
    share): a warning, and the command runs without."""
    wanted = tracing.wanted(config.tracing.enabled)
    flush: Callable[[], None] = lambda: None  # noqa: E731
    if wanted:
        try:
            flush = tracing.start(service)
        except tracing.TracingUnavailable as exc:
            if config.tracing.enabled:
                fail(f"[tracing] enabled: {exc}", code=2)
            log.warning("tracing is off: %s", exc)
            wanted = False
    return replace(config, tracing=TracingConfig(enabled=wanted)), flush
