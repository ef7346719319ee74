"""``jobledger worker module:function --queue Q``: run a :class:`jobledger.worker.worker.Worker` until
SIGTERM/SIGINT.  ``jobledger worker --exec [CMD] --queue Q``: the orchestrator's executor
(:mod:`jobledger.worker.executor`), CMD run in each job's directory; ``--exec-dir`` says where those
go, ``--keep`` leaves them (and the command's log) behind, ``--exec-env NAME`` passes a variable of
the worker's environment to the command, ``--exec-user USER`` runs it as that user.
``--metrics-port PORT`` serves the worker's own metrics (:mod:`jobledger.worker.metrics`) on
``--metrics-host`` (127.0.0.1 by default) while it runs.

Over HTTP (``--url``, the default transport) it needs only the server; with ``--transport redis`` it
finds the ledger's Redis the way every jobledger command does (``--config``, ``--data-dir``,
``--redis-url``, ``--namespace``) and runs the ledger's commands directly.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import signal
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from jobledger.blobs import open_store
from jobledger.cli.common import (
    LEDGER_DEFAULTS,
    LedgerOptions,
    LogFormatOption,
    SignalStop,
    check_partitions,
    fail,
    ledger_options,
    open_redis,
    start_tracing,
)
from jobledger.cli.job_commands import UrlOption
from jobledger.ledger.durations import parse_ms
from jobledger.ledger.requests import checked_worker_id
from jobledger.runtime import logs
from jobledger.runtime.config import Config
from jobledger.worker import event_loop
from jobledger.worker.executor import DEFAULT_COMMAND, Executor
from jobledger.worker.metrics import WorkerMetrics
from jobledger.worker.worker import Handler, Worker

app = typer.Typer()


class TransportKind(StrEnum):
    http = "http"
    redis = "redis"


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


def load_handler(spec: str) -> Handler:
    """The callable named ``module:function`` (attributes may be dotted), importable from the
    current directory as well as the installed packages."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        fail(f"the handler must be given as module:function, not {spec!r}", code=2)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        fail(f"cannot import {module_name!r}: {exc}", code=2)
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            fail(f"{module_name!r} has no {attribute!r}", code=2)
    if not callable(target):
        fail(f"{spec} is not callable", code=2)
    return target


def seconds(text: str, option: str) -> float:
    """A duration option ("30s", "1m", "0.5") in seconds; a usage error if it is not one."""
    try:
        return parse_ms(text) / 1000
    except ValueError as exc:
        fail(f"{option}: {exc}", code=2)


@contextlib.contextmanager
def served_metrics(port: int | None, host: str) -> Iterator[WorkerMetrics | None]:
    """The worker's metrics, served on ``host:port`` while the block runs; None without a port."""
    if port is None:
        yield None
        return
    metrics = WorkerMetrics()
    try:
        server = metrics.serve(port, host)
    except OSError as exc:
        fail(f"--metrics-port: cannot listen on {host}:{port}: {exc.strerror or exc}", code=1)
    try:
        yield metrics
    finally:
        server.shutdown()
        server.server_close()


def run_until_stopped(worker: Worker, stop: SignalStop) -> None:
    """Run the worker: the first SIGTERM / SIGINT stops it gracefully, the second hands its running
    jobs back at once.  The worker takes every signal while it runs (``stop`` would count only the
    first); ``stop``'s handlers are put back for whatever follows (stopping an embedded server)."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        worker.stop()

    previous = {sig: signal.signal(sig, on_signal) for sig in stop.SIGNALS}
    try:
        event_loop.run(worker.run_async())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@app.command("worker")
@ledger_options
def worker(
    queue: Annotated[list[str], typer.Option("--queue", "-q", help="A queue to work on (repeatable).")],
    handler: Annotated[
        str | None,
        typer.Argument(
            metavar="HANDLER|CMD",
            help=f"The handler to run for each job, as module:function; with --exec, the command to run "
            f"(default: {DEFAULT_COMMAND}).",
        ),
    ] = None,
    exec_command: Annotated[
        bool,
        typer.Option(
            "--exec",
            help="Run a command (split as a shell would, run without one) in each job's directory, its "
            "files there; upload the files it writes; complete on exit 0, else fail with kind exit:N.",
        ),
    ] = False,
    exec_dir: Annotated[
        Path | None, typer.Option(help="Where jobs' directories go (default: the temporary directory).")
    ] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Leave jobs' directories and logs behind.")] = False,
    exec_env: Annotated[
        list[str] | None,
        typer.Option(
            "--exec-env",
            metavar="NAME",
            help="With --exec, pass this variable of the worker's environment to the command (repeatable); "
            "else it gets only PATH, HOME, LANG, LC_*, TMPDIR and the job's JOBLEDGER_* variables.",
        ),
    ] = None,
    exec_user: Annotated[
        str | None,
        typer.Option(
            "--exec-user", metavar="USER", help="With --exec, run the command as USER (needs root)."
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="How many jobs to run at once.")] = 1,
    transport: Annotated[
        TransportKind, typer.Option(help="http: through the server; redis: straight to the ledger.")
    ] = TransportKind.http,
    url: UrlOption = None,
    grace_period: Annotated[
        str, typer.Option(help="On SIGTERM, how long running jobs may take to finish.")
    ] = "30s",
    heartbeat_interval: Annotated[
        str | None,
        typer.Option(help="Heartbeat this often (default: a third of each job's heartbeat_timeout)."),
    ] = None,
    worker_id: Annotated[
        str | None, typer.Option(help="The id recorded on jobs (default host-pid-random).")
    ] = None,
    log_level: Annotated[
        LogLevel, typer.Option(help="info: a line per job; warning: failures and trouble only.")
    ] = LogLevel.info,
    log_format: LogFormatOption = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Serve the worker's own Prometheus metrics on this port."),
    ] = None,
    metrics_host: Annotated[str, typer.Option(help="The address --metrics-port listens on.")] = "127.0.0.1",
    ledger: LedgerOptions = LEDGER_DEFAULTS,
) -> None:
    """Run a worker: fetch jobs, run the handler (or with --exec the command), complete or fail them,
    until SIGTERM or SIGINT."""
    try:  # httpx2's request lines only at debug
        logs.configure(log_level, log_format)
    except ValueError as exc:
        fail(f"--log-format: {exc}", code=2)
    if handler is None and not exec_command:
        fail("give a handler (module:function), or --exec [CMD]", code=2)
    if (exec_env or exec_user is not None) and not exec_command:
        fail("--exec-env and --exec-user go with --exec", code=2)
    if worker_id is not None:
        try:
            checked_worker_id(worker_id)
        except ValueError as exc:
            fail(f"--worker-id: {exc}", code=2)
    make = functools.partial(
        Worker,
        _executor(handler or DEFAULT_COMMAND, keep, exec_env or [], exec_user)
        if exec_command
        else load_handler(handler or ""),
        queue,
        files_dir=exec_dir,
        upload_written=exec_command,
        keep_files=keep,
        concurrency=concurrency,
        worker_id=worker_id,
        grace_period=seconds(grace_period, "--grace-period"),
        heartbeat_interval=None
        if heartbeat_interval is None
        else seconds(heartbeat_interval, "--heartbeat-interval"),
    )
    config, flush_spans = start_tracing(ledger.config(), "jobledger-worker")
    try:
        _run(
            functools.partial(make, tracing=config.tracing.enabled),
            transport,
            url,
            config,
            metrics_port,
            metrics_host,
        )
    finally:
        flush_spans()


def _run(
    make: functools.partial[Worker],
    transport: TransportKind,
    url: str | None,
    config: Config,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Run the worker ``make`` makes, over HTTP to ``url`` or straight to the ledger's Redis, with its
    metrics served on ``metrics_host:metrics_port`` when a port is given."""
    with SignalStop() as stop, served_metrics(metrics_port, metrics_host) as metrics:
        make = functools.partial(make, metrics=metrics)
        if transport is TransportKind.http:
            run_until_stopped(make(transport="http", url=url), stop)
            return
        with open_redis(config, stop) as found:
            check_partitions(config, found)
            ns, blobs = (
                config.redis.key_namespace,
                open_store(config.blobs, config.embedded.data_dir, config.redis.key_namespace),
            )
            split = config.redis.partitions
            run_until_stopped(
                make(transport="redis", redis_url=found, namespace=ns, blobs=blobs, partitions=split), stop
            )


def _executor(command: str, keep: bool, env: list[str], user: str | None) -> Executor:
    for name in env:
        if not name or "=" in name or "\0" in name:
            fail(f"--exec-env: {name!r} is not the name of a variable", code=2)
    try:
        return Executor(command, keep=keep, env=env, user=user)
    except ValueError as exc:  # an empty command, quotes that do not close, a user not to be had
        fail(f"--exec: {exc}", code=2)
