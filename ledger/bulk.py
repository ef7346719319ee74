"""Bulk operations: requeue, cancel or delete every job that matches a filter, as commands.

An operation is a ``bulk_started`` event (its id is the operation's id; its data the action and the
filter; its entry's actor who asked), then batches of jobs, each batch one ``bulk_jobs`` script call
on one partition that checks every job it is given against the filter and the action's transition
and appends the job's own event (``job_requeued``, ``job_cancelled``, ``job_deleted``) with the
operation's id in its data, then ``bulk_finished`` with the counts.  A job that moved meanwhile is
skipped, never forced, so an operation interrupted half-way leaves each job in one state, and a run
of the same operation again (or of the same filter) finishes it.  What feeds the batches (which
jobs to look at) is :mod:`jobledger.projections.bulk_reads`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from jobledger.ledger.commands import Call
from jobledger.ledger.events import BulkAction
from jobledger.ledger.partitions import HOME, partition_route
from jobledger.ledger.requests import JOB_STATUSES, ErrorKind, QueueName, Status, Tag, Time

#: The most ids one request may name.
MAX_IDS = 10_000
#: How many jobs one batch (one script call) looks at: small enough that no call holds Redis long.
BATCH = 100
#: What the script checks on each job it is given.
CRITERIA = ("queue", "status", "tag", "error_kind", "since", "until")
#: Several statuses at once: any of them (the dashboard's failed page acts on failed and timed_out).
Statuses = Annotated[list[Status], Field(min_length=1, max_length=len(JOB_STATUSES))]


class BulkFilter(BaseModel):
    """Which jobs a bulk operation acts on: every criterion given must hold.  ``since`` / ``until``
    bound the time the job reached its status (``ended_at``, else ``started_at``, else
    ``created_at``), ``until`` excluded."""

    model_config = ConfigDict(extra="forbid")

    queue: QueueName | None = Field(default=None, description="Only jobs of this queue.")
    status: Status | Statuses | None = Field(
        default=None, description="Only jobs with this status (a list: with any of these statuses)."
    )
    tag: Tag | None = Field(default=None, description="Only jobs with this tag.")
    error_kind: ErrorKind | None = Field(
        default=None, description="Only jobs whose latest error has this kind."
    )
    since: Time | None = Field(
        default=None, description="Only jobs that reached their status at or after this time."
    )
    until: Time | None = Field(
        default=None, description="Only jobs that reached their status before this time."
    )
    ids: Annotated[list[Annotated[StrictInt, Field(ge=1)]], Field(max_length=MAX_IDS)] | None = Field(
        default=None, description="Only these jobs."
    )

    @model_validator(mode="after")
    def _ordered(self) -> BulkFilter:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must come before until")
        return self

    def statuses(self) -> tuple[str, ...] | None:
        """The statuses the filter names, as one tuple (None: any status)."""
        if self.status is None:
            return None
        return (self.status,) if isinstance(self.status, str) else tuple(dict.fromkeys(self.status))

    def criteria(self) -> dict[str, Any]:
        """What the script checks on each job (the ids are what it is given), JSON-ready."""
        return self.model_dump(exclude_none=True, include=set(CRITERIA))


class BulkRequest(BulkFilter):
    """The body of ``POST /bulk``: the action, the filter, and whether only to count (``dry_run``)."""

    action: BulkAction = Field(description="What to do with each job that matches.")
    dry_run: StrictBool = Field(default=False, description="Count the jobs that match; change nothing.")

    def started_data(self) -> str:
        """The ``bulk_started`` data: the action and the filter as given (times in ms)."""
        data = self.model_dump(exclude_none=True, exclude={"dry_run"})
        return json.dumps(data, separators=(",", ":"))


def bulk_start(request: BulkRequest) -> Call[str]:
    """Record the start of an operation (in the home partition); its id."""
    args = (request.started_data(), request.queue or "")
    return Call("bulk_start", args, lambda r: r.decode() if isinstance(r, bytes) else str(r), HOME)


def bulk_jobs(
    partition: int, action: str, operation: str | None, flt: BulkFilter, ids: list[int]
) -> Call[tuple[int, int]]:
    """One batch on ``partition`` (every id one of its): ``(matched, done)``; ``operation`` None
    counts only (a dry run)."""
    criteria = json.dumps(flt.criteria(), separators=(",", ":"))
    args = (action, operation or "", criteria, "" if operation else "1", *ids)
    return Call("bulk_jobs", args, lambda r: (int(r[0]), int(r[1])), partition_route(partition))


def bulk_finish(operation: str, matched: int, done: int) -> Call[bool]:
    """Record that ``operation`` went through; False when it had been recorded already."""
    return Call("bulk_finish", (operation, matched, done), lambda r: int(r) == 1, HOME)
