"""What kind of value each field of an option model holds (a duration, a list of durations, a time, a
number, a flag, text, a list, a nested model), read from its annotation, so that whatever treats
options by kind (views that show durations compactly, the Lua tables of numeric settings, the
OpenAPI answers, the command line's output) takes its names from the models that declare them.

A duration or a time is an ``int`` of milliseconds, told apart by the unit its annotation carries
(:data:`DURATION`, :data:`TIME`: pydantic ignores metadata it does not know).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Le
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from jobledger.ledger.durations import format_ms


@dataclass(frozen=True)
class Unit:
    """What an ``int`` of milliseconds measures: a span of time, or a moment."""

    name: Literal["duration", "time"]


DURATION = Unit("duration")
TIME = Unit("time")

Kind = Literal["duration", "durations", "time", "number", "flag", "text", "list", "model", "any"]


def _bare(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """``annotation`` without ``| None`` and ``Annotated``, and the metadata those layers held."""
    metadata: tuple[Any, ...] = ()
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extra = get_args(annotation)
            metadata += tuple(extra)
        elif origin in (Union, types.UnionType):
            given = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(given) != 1:
                return annotation, metadata
            annotation = given[0]
        else:
            return annotation, metadata


def _unit(metadata: tuple[Any, ...]) -> Unit | None:
    return next((m for m in metadata if isinstance(m, Unit)), None)


def kind(field: FieldInfo) -> Kind:
    """The kind of value ``field`` holds, whether it may be None or not."""
    annotation, metadata = _bare(field.annotation)
    unit = _unit((*metadata, *field.metadata))
    if unit is not None:
        return unit.name
    if get_origin(annotation) is list:
        item_metadata = _bare(get_args(annotation)[0])[1]
        return "durations" if _unit(item_metadata) == DURATION else "list"
    if isinstance(annotation, type):
        if issubclass(annotation, bool):
            return "flag"
        if issubclass(annotation, int | float):
            return "number"
        if issubclass(annotation, str):
            return "text"
        if issubclass(annotation, BaseModel):
            return "model"
    return "any"


def nested(field: FieldInfo) -> type[BaseModel]:
    """The model a field of kind ``model`` holds."""
    model = _bare(field.annotation)[0]
    assert isinstance(model, type) and issubclass(model, BaseModel), f"{field} holds no model"
    return model


def bounds(field: FieldInfo) -> tuple[Any, Any]:
    """The least and the most a numeric field may hold, as declared (None where it sets none)."""
    found = [*field.metadata, *_bare(field.annotation)[1]]
    flat = [inner for m in found for inner in (m.metadata if isinstance(m, FieldInfo) else [m])]
    low = next((m.ge for m in flat if isinstance(m, Ge)), None)
    high = next((m.le for m in flat if isinstance(m, Le)), None)
    return low, high


def named(model: type[BaseModel], *kinds: Kind) -> tuple[str, ...]:
    """The names of ``model``'s fields of these kinds, in the model's order."""
    return tuple(name for name, field in model.model_fields.items() if kind(field) in kinds)


#: The kinds whose value is a number (a duration and a time are milliseconds).
NUMBERS: tuple[Kind, ...] = ("duration", "time", "number")


def shown(model: type[BaseModel], data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (fields of ``model``, durations in milliseconds) as the API shows it: durations as
    compact strings ("5m"), nested models likewise, each in its model's order; the rest as it is."""
    out = dict(data)
    for name, value in data.items():
        field = model.model_fields.get(name)
        if field is None or value is None:
            continue
        found = kind(field)
        if found == "duration":
            out[name] = format_ms(int(value))
        elif found == "durations":
            out[name] = [format_ms(int(v)) for v in value]
        elif found == "model" and isinstance(value, Mapping):
            inner = nested(field)
            ordered = {n: value[n] for n in inner.model_fields if n in value}
            out[name] = shown(inner, ordered)
    return out
