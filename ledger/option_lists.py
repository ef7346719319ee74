"""The lists of option names that code copies from one place to another (a queue's settings into its
hash, a queue's defaults into a new job, a job's settings into its record and its view), derived
from the models that declare the options, so that a new option reaches the scripts and the views by
being declared.

A Lua file asks for a list where it defines the table, as ``local X = --[[ @names "list" ]] {}``;
the composer (:mod:`jobledger.ledger.scripts`) writes the names in place of the ``{}``.
"""

from __future__ import annotations

from functools import cache

from jobledger.ledger.events import IdempotencyData, JobCreated
from jobledger.ledger.option_kinds import NUMBERS, named
from jobledger.ledger.requests import JobOptions, QueueSettings

#: The fields of job_created that ``ledger/lua/lib/new_job.lua`` works out itself rather than copies
#: from the options: the input (passed apart), when it starts, and the launcher that made it.
_WORKED_OUT = ("input", "run_at", "launcher")


def job_defaults() -> tuple[str, ...]:
    """The job options a queue gives the default of, in the queue's order (a numeric one first,
    which every queue's hash holds)."""
    return tuple(name for name in QueueSettings.model_fields if name in JobOptions.model_fields)


def job_numbers() -> tuple[str, ...]:
    """The numeric ones of :func:`job_defaults`."""
    numbers = set(named(QueueSettings, *NUMBERS))
    return tuple(name for name in job_defaults() if name in numbers)


def job_policies() -> tuple[str, ...]:
    """The others of :func:`job_defaults` (lists and models)."""
    return tuple(name for name in job_defaults() if name not in job_numbers())


def job_recorded() -> tuple[str, ...]:
    """What a job's hash copies from its job_created event besides :func:`job_numbers`: every field
    of the event but the Idempotency-Key's."""
    skip = {*job_numbers(), *IdempotencyData.model_fields}
    return tuple(name for name in JobCreated.model_fields if name not in skip)


def job_own() -> tuple[str, ...]:
    """The options a job has no queue default for, copied into job_created as given."""
    skip = {*job_defaults(), *_WORKED_OUT}
    return tuple(name for name in job_recorded() if name not in skip)


def queue_settings() -> tuple[str, ...]:
    """Every queue setting, as a queue's hash holds them."""
    return tuple(QueueSettings.model_fields)


#: The lists a Lua file may ask for, by name.
LISTS = {
    f.__name__: f for f in (job_defaults, job_numbers, job_policies, job_recorded, job_own, queue_settings)
}


@cache
def lua_table(name: str) -> str:
    """The Lua table constructor of the list ``name`` (KeyError for a list there is none of)."""
    return "{" + ", ".join(f"'{field}'" for field in LISTS[name]()) + "}"
