"""The client's exception tree: one root, one class per kind of answer a caller handles differently.

Each error carries the server's own message (the ``error`` of its JSON body) and the HTTP status
(None when no answer came back at all, e.g. the server could not be reached).
"""

from __future__ import annotations


class ClientError(Exception):
    """Root of every error the jobledger client raises."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class BadRequest(ClientError):
    """400 (or 413): the request was malformed or invalid; nothing changed on the server."""


class NotFound(ClientError):
    """404: the queue or job does not exist."""


class Conflict(ClientError):
    """409: the current state refuses the request, e.g. a stale attempt or a transition not allowed;
    or 422: an Idempotency-Key sent again with another request than its first."""


class Unauthorized(ClientError):
    """401: the server wants a token (``token=`` or ``$JOBLEDGER_TOKEN``), or does not know this one."""


class Forbidden(ClientError):
    """403: the token's scopes do not cover the request."""


class ReadOnly(ClientError):
    """405: the server serves a read-only view and accepts no writes."""


class Unavailable(ClientError):
    """The server could not be reached, or it could not reach Redis (503); retrying later may work."""


class ServerError(ClientError):
    """Any other unexpected answer (a 500, or a status this client does not know)."""


class DigestMismatch(ClientError):
    """Bytes sent or received do not hash to the SHA-256 the other side named; nothing was kept."""


class WaitTimeout(ClientError, TimeoutError):
    """:meth:`Client.wait` gave up: the job had not ended within the timeout."""

    def __init__(self, job_id: int, timeout: float, status: str | None) -> None:
        super().__init__(f"job {job_id} had not ended after {timeout:g}s (status: {status})")
        self.job_id = job_id
        self.last_status = status


_BY_STATUS: dict[int, type[ClientError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: ReadOnly,
    409: Conflict,
    413: BadRequest,
    422: Conflict,
    503: Unavailable,
}


def error_for(status: int, message: str) -> ClientError:
    """The exception that an error answer with this status stands for."""
    return _BY_STATUS.get(status, ServerError)(message, status)
