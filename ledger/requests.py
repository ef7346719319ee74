"""What commands accept: queue settings and job options, validated with pydantic.

The HTTP bodies are these models, so a bad field is refused before any script runs (no event is
appended).  Durations arrive as human strings or seconds and are held as milliseconds.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StrictStr

from ledger.durations import format_ms, parse_ms

Duration = Annotated[int, BeforeValidator(parse_ms)]
#: At most 2**31 - 1: exact through Lua's 14-digit number encoding, so it reads back as set.
Count = Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]
Tag = Annotated[StrictStr, Field(min_length=1, max_length=255)]

FIVE_MINUTES = 300_000


class QueueSettings(BaseModel):
    """Ocypod's queue settings; a field left out takes its default (as Ocypod does on PUT)."""

    model_config = ConfigDict(extra="forbid")

    timeout: Duration = FIVE_MINUTES
    heartbeat_timeout: Duration = 0
    expires_after: Duration = FIVE_MINUTES
    retries: Count = 0
    retry_delays: list[Duration] = []

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), separators=(",", ":"))

    def view(self) -> dict[str, Any]:
        """As the API shows it: durations as compact strings."""
        return {
            "timeout": format_ms(self.timeout),
            "heartbeat_timeout": format_ms(self.heartbeat_timeout),
            "expires_after": format_ms(self.expires_after),
            "retries": self.retries,
            "retry_delays": [format_ms(d) for d in self.retry_delays],
        }


class JobOptions(BaseModel):
    """A job's creation body.  Settings left out come from the queue, inside the create script."""

    model_config = ConfigDict(extra="forbid")

    input: Any = None
    tags: list[Tag] | None = None
    timeout: Duration | None = None
    heartbeat_timeout: Duration | None = None
    expires_after: Duration | None = None
    retries: Count | None = None
    retry_delays: list[Duration] | None = None

    def options_json(self) -> str:
        """The settings the request gave (not input), for the create script."""
        return json.dumps(self.model_dump(exclude={"input"}, exclude_none=True), separators=(",", ":"))

    def input_text(self) -> str:
        return "" if self.input is None else json_text(self.input)


class JobUpdate(BaseModel):
    """PATCH /job/{id}: a status and/or an output; only fields present change anything."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["completed", "failed", "cancelled", "queued"] | None = None
    output: Any = None
    attempt: Annotated[StrictInt, Field(ge=1)] | None = None

    def output_text(self) -> str:
        return json_text(self.output) if "output" in self.model_fields_set else ""


def json_text(value: Any) -> str:
    """Compact JSON text of a user value."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
