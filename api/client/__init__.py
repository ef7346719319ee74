"""The Python client of jobledger's HTTP API: :class:`Client` (sync) and :class:`AsyncClient`.

Requests are built and parsed once, in :mod:`jobledger.client.calls`; the two clients only send them.
Errors are the :mod:`jobledger.client.errors` tree, each carrying the server's message.
"""

from jobledger.client import calls
from jobledger.client.aio import AsyncClient
from jobledger.client.calls import DEFAULT_URL
from jobledger.client.errors import (
    BadRequest,
    ClientError,
    Conflict,
    DigestMismatch,
    Forbidden,
    NotFound,
    ReadOnly,
    ServerError,
    Unauthorized,
    Unavailable,
    WaitTimeout,
)
from jobledger.client.models import (
    Batched,
    Event,
    FetchedJob,
    Job,
    JobSpec,
    QueueSettings,
    StoredFile,
    StoredResult,
    Submitted,
)
from jobledger.client.policy import Retry
from jobledger.client.sync import Client
from jobledger.client.transfers import Upload

__all__ = [
    "DEFAULT_URL",
    "AsyncClient",
    "BadRequest",
    "Batched",
    "Client",
    "ClientError",
    "Conflict",
    "DigestMismatch",
    "Event",
    "FetchedJob",
    "Forbidden",
    "Job",
    "JobSpec",
    "NotFound",
    "QueueSettings",
    "ReadOnly",
    "Retry",
    "ServerError",
    "StoredFile",
    "StoredResult",
    "Submitted",
    "Unauthorized",
    "Unavailable",
    "Upload",
    "WaitTimeout",
    "calls",
]
