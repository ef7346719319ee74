"""jobledger: a job queue server whose source of truth is an append-only event ledger.

``from jobledger import Client, AsyncClient, Worker`` gives the Python client and worker, and
``from jobledger import NotFound, Conflict, ...`` the client's errors; the
server, the command line and the layers below them live in the subpackages (``jobledger.server``,
``jobledger.cli``, ``jobledger.ledger``...).  The names here are imported on first use, so that
importing any subpackage does not load the client.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobledger.client import AsyncClient, Client
    from jobledger.worker import Worker


#: The client's errors, as ``from jobledger import NotFound, Conflict`` names them.
ERRORS = ("ClientError", "BadRequest", "NotFound", "Conflict", "Unauthorized", "Forbidden", "ReadOnly",
          "Unavailable", "ServerError", "DigestMismatch", "WaitTimeout")  # fmt: skip
_FACE = {
    "Client": "jobledger.client",
    "AsyncClient": "jobledger.client",
    "Worker": "jobledger.worker",
    **dict.fromkeys(ERRORS, "jobledger.client.errors"),
}

__all__ = [
    "AsyncClient",
    "BadRequest",
    "Client",
    "ClientError",
    "Conflict",
    "DigestMismatch",
    "Forbidden",
    "NotFound",
    "ReadOnly",
    "ServerError",
    "Unauthorized",
    "Unavailable",
    "WaitTimeout",
    "Worker",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _FACE:
        return getattr(import_module(_FACE[name]), name)
    if name == "__version__":  # found on first use: it walks the installed distributions
        return import_module("jobledger.runtime.version").version()
    raise AttributeError(f"module 'jobledger' has no attribute {name!r}")
