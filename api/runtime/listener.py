"""Where the embedded server listens: never where another local user gets in.

In the order tried:

1. a unix socket in the data directory (0700), when its path fits the kernel's limit for one;
2. else a unix socket in a short private directory: ``jobledger-XXXXXXXX`` made 0700 by
   :func:`tempfile.mkdtemp` under ``$XDG_RUNTIME_DIR`` or the temporary directory (``$TMPDIR``,
   else ``/tmp``);
   the server's record names it, so every other command finds the socket, and it is removed with
   the server (or, after a SIGKILL, by the next start on the data directory);
3. else 127.0.0.1 on a free port with a random password (``requirepass``, 256 bits).  The password
   reaches valkey-server on its standard input, never on its command line (which any local user
   reads in ``/proc``), and sits in the server's URL in its record (0600), which is how every
   jobledger command given the data directory connects.

A socket is itself 0700 (``unixsocketperm``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOCKET_NAME = "valkey.sock"
#: Longest unix socket path we use; the kernel's limit is 108 bytes on Linux, 104 on macOS.
MAX_SOCKET_PATH = 100
#: What the private socket directories are called (``mkdtemp`` adds eight random characters).
SOCKET_DIR_PREFIX = "jobledger-"
_SOCKET_DIR_TAIL = len(SOCKET_DIR_PREFIX) + 8 + 1 + len(SOCKET_NAME)  # jobledger-XXXXXXXX/valkey.sock


@dataclass(frozen=True)
class Listener:
    """How a server is to listen: the URL clients use (its password in it, if any), valkey-server's
    arguments, the configuration it reads on its standard input, and the private directory made
    for its socket (None: none was made)."""

    url: str
    args: tuple[str, ...]
    secret_config: str = ""
    socket_dir: Path | None = None


def listener(data_dir: Path) -> Listener:
    """Where a server on ``data_dir`` listens (see the module)."""
    path = data_dir / SOCKET_NAME
    if _fits(path):
        return _unix(path)
    made = _private_socket_dir()
    if made is not None:
        return _unix(made / SOCKET_NAME, made)
    password, port = secrets.token_urlsafe(32), free_port()
    return Listener(
        f"redis://:{password}@127.0.0.1:{port}",
        ("--bind", "127.0.0.1", "--port", str(port)),
        f"requirepass {password}\n",
    )


def _fits(path: Path) -> bool:
    return len(os.fsencode(path)) <= MAX_SOCKET_PATH


def _unix(path: Path, made: Path | None = None) -> Listener:
    args = ("--port", "0", "--unixsocket", str(path), "--unixsocketperm", "700")
    return Listener(f"unix://{path}", args, socket_dir=made)


def _private_socket_dir() -> Path | None:
    """A fresh 0700 directory whose socket path fits, under the first place that allows one."""
    places = [os.environ.get("XDG_RUNTIME_DIR", ""), tempfile.gettempdir()]
    for place in dict.fromkeys(p for p in places if p):
        base = Path(place)
        if not base.is_dir() or len(os.fsencode(base)) + 1 + _SOCKET_DIR_TAIL > MAX_SOCKET_PATH:
            continue
        try:
            return Path(tempfile.mkdtemp(prefix=SOCKET_DIR_PREFIX, dir=base))
        except OSError:
            continue
    return None


def remove_socket_dir(path: Path | None) -> None:
    """Remove a private socket directory (its socket, if the server left it, then the directory);
    a path that is not one of ours is left alone."""
    if path is None or not path.name.startswith(SOCKET_DIR_PREFIX):
        return
    with contextlib.suppress(OSError):
        (path / SOCKET_NAME).unlink(missing_ok=True)
        path.rmdir()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
