"""Who caused an event: the actor names every event's entry records, and what an actor may be.

Kept apart from the event models (:mod:`jobledger.ledger.events`, which names them too) so that the
runner, which sets the actor of every command, loads no model."""

from __future__ import annotations

import re

#: The actor of an event, recorded in its entry's ``actor`` field, says who caused it: the name of
#: the token of the request that ran the command, ``local`` when the server runs without auth (and
#: for commands run straight on the ledger: the CLI, a worker's Redis transport), ``scheduler`` for
#: the scheduler's checks, ``launcher:ID`` for what launcher ID's firing appends.  Entries written
#: before the field existed have none and read as ``local`` (the upcast of
#: :func:`jobledger.ledger.events.decode_entry`).
LOCAL = "local"
SCHEDULER = "scheduler"
MAX_ACTOR = 255
#: What an actor may be: 1 to 255 characters, none of them a control character.
ACTOR_PATTERN = r"^[^\x00-\x1f\x7f]{1,255}$"
_ACTOR = re.compile(ACTOR_PATTERN)


def launcher_actor(launcher: int | str) -> str:
    """The actor of the events a launcher's firing appends (``ledger/lua/lib/launch.lua``)."""
    return f"launcher:{launcher}"


def valid_actor(name: str) -> bool:
    """Whether ``name`` can be an actor (:data:`ACTOR_PATTERN`)."""
    return _ACTOR.fullmatch(name) is not None
