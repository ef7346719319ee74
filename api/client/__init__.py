"""The Python client of jobledger's HTTP API: :class:`Client` (sync) and :class:`AsyncClient`.

Requests are built and parsed once, in :mod:`api.client.calls`; the two clients only send them.
Errors are the :mod:`api.client.errors` tree, each carrying the server's message.
"""

from api.client import calls
from api.client.aio import AsyncClient
from api.client.calls import DEFAULT_URL
from api.client.errors import (
    BadRequest,
    ClientError,
    Conflict,
    NotFound,
    ReadOnly,
    ServerError,
    Unavailable,
    WaitTimeout,
)
from api.client.models import Event, FetchedJob, Job, JobSpec, QueueSettings
from api.client.policy import Retry
from api.client.sync import Client

__all__ = [
    "DEFAULT_URL",
    "AsyncClient",
    "BadRequest",
    "Client",
    "ClientError",
    "Conflict",
    "Event",
    "FetchedJob",
    "Job",
    "JobSpec",
    "NotFound",
    "QueueSettings",
    "ReadOnly",
    "Retry",
    "ServerError",
    "Unavailable",
    "WaitTimeout",
    "calls",
]
