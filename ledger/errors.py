"""One exception tree for the whole product.

Lua scripts refuse a command with ``redis.error_reply("<CODE> <message>")``; :func:`from_reply`
turns that reply into the matching exception, and the HTTP layer maps each class to a status code.
"""

from __future__ import annotations


class JobLedgerError(Exception):
    """Root of every error jobledger raises on purpose."""

    code = "ERROR"
    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(JobLedgerError):
    """The input is malformed or invalid; nothing changed."""

    code = "BAD_REQUEST"
    status = 400


class NotFound(JobLedgerError):
    """The queue, job or launcher does not exist."""

    code = "NOT_FOUND"
    status = 404


class Conflict(JobLedgerError):
    """The request is valid but the current state refuses it (e.g. a transition the table does not list)."""

    code = "CONFLICT"
    status = 409


class Mismatch(JobLedgerError):
    """An Idempotency-Key sent again with another request than the one it was first sent with."""

    code = "MISMATCH"
    status = 422


class Unauthorized(JobLedgerError):
    """The request's token is unknown to the ledger or was revoked; nothing changed."""

    code = "UNAUTHORIZED"
    status = 401


class Unavailable(JobLedgerError):
    """Redis cannot be reached."""

    code = "UNAVAILABLE"
    status = 503


class Refused(JobLedgerError):
    """Commands of a batch the ledger refused, while the rest of the batch and of the work went on
    (see :meth:`jobledger.ledger.runner.Ledger.drive`): ``refusals`` holds each refusal, in order, and
    ``result`` what the work returned without them."""

    code = "REFUSED"

    def __init__(self, refusals: list[Exception], result: object) -> None:
        shown = "; ".join(str(r) or type(r).__name__ for r in refusals[:3])
        more = f" (and {len(refusals) - 3} more)" if len(refusals) > 3 else ""
        super().__init__(f"{len(refusals)} command(s) of a batch refused: {shown}{more}")
        self.refusals = refusals
        self.result = result


_BY_CODE = {cls.code: cls for cls in (BadRequest, NotFound, Conflict, Mismatch, Unauthorized)}


def from_reply(text: str) -> JobLedgerError | None:
    """The exception a script's error reply names, or None if the reply is not one of ours."""
    code, _, message = text.partition(" ")
    cls = _BY_CODE.get(code)
    return cls(message) if cls else None
