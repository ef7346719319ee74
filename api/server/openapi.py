"""``GET /openapi.json``: an OpenAPI 3.1 description of every route the app serves.

Built at request time from the records of the routes the app serves (:data:`jobledger.server.routes.ROUTES`),
each described by the operation its record names in :mod:`jobledger.server.openapi_paths`, with the
Idempotency-Key where the record says the route takes one.  Request body schemas come from the pydantic
models of ``jobledger.ledger.requests``; their nested models are collected into ``components.schemas``.
``components.securitySchemes`` names the bearer token; on a server with auth on, every route the
token check guards (its record's ``needs``) wants it and answers 401 and 403 too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger import requests
from jobledger.ledger.durations import MAX_MS
from jobledger.projections.views import JOB_FIELDS
from jobledger.runtime.version import version as installed_version
from jobledger.server.api_route import ApiPath, ApiRoute
from jobledger.server.openapi_paths import (
    IDEMPOTENT,
    JSON,
    MISMATCH,
    PATH_PARAMS,
    QUERY_PARAMS,
    REF,
    Body,
    Operation,
    Param,
    Reply,
    response_schemas,
)
from jobledger.server.openapi_paths import ref as schema_ref

_PATH_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")  # Starlette's {name} or {name:convertor}

DURATION: JSON = {
    "anyOf": [
        {"type": "string", "description": "A duration: 30s, 1h15m5s, 3w2d, 1.5h.", "examples": ["5m"]},
        {"type": "number", "minimum": 0, "maximum": MAX_MS // 1000, "description": "Seconds."},
    ]
}
TIME: JSON = {"type": "string", "format": "date-time", "description": "RFC 3339, e.g. 2026-11-20T18:52:42Z."}

#: Before-validators that accept more than the type they produce -> the schema of what they accept.
_ACCEPTS: dict[Callable[..., Any], Callable[[JSON], JSON]] = {
    requests._duration: lambda _inner: DURATION,
    requests._time: lambda _inner: TIME,
    requests._error: lambda inner: {"anyOf": [{"type": "string", "description": "The message."}, inner]},
}


_GIVEN: JSON = {"not": {"type": "null"}}

#: Rules of the models' ``model_validator``s, which pydantic cannot put into their schemas.
_RULES: dict[str, JSON] = {
    "JobOptions": {  # run_at or delay, not both
        "not": {"required": ["run_at", "delay"], "properties": {"run_at": _GIVEN, "delay": _GIVEN}}
    },
    "JobUpdate": {  # error goes with status "failed"
        "if": {"required": ["error"], "properties": {"error": _GIVEN}},
        "then": {"required": ["status"], "properties": {"status": {"const": "failed"}}},
    },
}


class RequestSchema(GenerateJsonSchema):
    """Pydantic's validation schema, but with what the before-validators accept (durations as text
    or seconds, times as RFC 3339 text), not the integers they turn it into."""

    def function_before_schema(self, schema: core_schema.BeforeValidatorFunctionSchema) -> JsonSchemaValue:
        inner = super().function_before_schema(schema)
        accepts = _ACCEPTS.get(schema["function"]["function"])
        return accepts(inner) if accepts else inner


class Components:
    """``components.schemas`` as it fills: the answers' schemas, then each model a body uses."""

    def __init__(self) -> None:
        self.schemas: dict[str, JSON] = response_schemas(JOB_FIELDS)

    def model(self, model: type[BaseModel]) -> JSON:
        """A ``$ref`` to ``model``'s schema, adding it and the models it nests."""
        if model.__name__ not in self.schemas:
            schema = model.model_json_schema(ref_template=REF, schema_generator=RequestSchema)
            self.schemas.update(schema.pop("$defs", {}))
            self.schemas[model.__name__] = schema | _RULES.get(model.__name__, {})
        return schema_ref(model.__name__)


def _parameter(name: str, where: str, param: Param, required: bool) -> JSON:
    return {"name": name, "in": where, "required": required, "description": param.description,
            "schema": param.schema}  # fmt: skip


def path_params(path: str) -> list[JSON]:
    """The path's parameters; a name :data:`PATH_PARAMS` does not know is a plain string."""
    out = []
    for name in _PATH_PARAM.findall(path):
        param = PATH_PARAMS.get(name, Param({"type": "string"}, f"The {name} path segment."))
        out.append(_parameter(name, "path", param, required=True))
    return out


def _error(description: str) -> JSON:
    return {"description": description, "content": {"application/json": {"schema": schema_ref("Error")}}}


def _reply(status: int, reply: Reply) -> JSON:
    if status >= 400:
        return _error(reply.description)
    out: JSON = {"description": reply.description}
    if reply.schema is not None and status != 204:
        out["content"] = {reply.media_type: {"schema": reply.schema}}
        out["content"].update({media: {"schema": schema} for media, schema in reply.also.items()})
    if reply.location:
        out["headers"] = {"location": {"description": "Where the resource is.", "schema": {"type": "string"}}}
    return out


def _shared_errors(path: str, op: Operation) -> dict[int, str]:
    """The statuses that follow from the kind of endpoint: its parameters, body and storage."""
    out: dict[int, str] = {}
    if op.body or op.query or any(name in path for name in ("{queue}", "{tag}", "{job_id}", "{launcher_id}")):
        out[400] = "Bad request (an id out of range too): what was wrong is in error."
    if "{job_id}" in path:
        out[404] = "No such job."
    if op.body:
        out[413] = "Body over max_body_size."
    if op.body and op.body.media_type == "application/json":
        out[415] = "A body whose Content-Type is not application/json (or application/*+json)."
    if op.uses_redis:
        out[503] = "Redis is unreachable."
    return out


#: ``components.securitySchemes``: the bearer token every guarded route wants with auth on.
SECURITY_SCHEMES: JSON = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "A token's secret (jobledger token create NAME --scope SCOPE...), sent as "
        "Authorization: Bearer SECRET.  Scopes: admin, read, produce:GLOB, work:GLOB.",
    }
}
AUTH_ERRORS = {
    401: "No token, or one the ledger does not know (wrong or revoked); WWW-Authenticate says Bearer.",
    403: "The token's scopes do not cover this route (or its queue).",
}


def _guard(route: ApiRoute, out: JSON) -> None:
    """With auth on: what the route needs, its security requirement and its 401/403 answers (an
    open route says it needs none)."""
    needs = route.needs
    if needs.kind == "open":
        out["security"] = []
        return
    out["security"] = [{"bearer": []}]
    out["x-jobledger-scope"] = needs.describe()
    responses = out["responses"]
    for status, description in AUTH_ERRORS.items():
        responses.setdefault(str(status), _error(description))
    out["responses"] = dict(sorted(responses.items()))


def _responses(path: str, op: Operation) -> JSON:
    out = {str(s): _reply(s, r) for s, r in sorted(op.responses.items())}
    for status, description in _shared_errors(path, op).items():
        out.setdefault(str(status), _error(description))
    return dict(sorted(out.items()))


def _request_body(body: Body, components: Components) -> JSON:
    schema = body.schema if body.model is None else components.model(body.model)
    if body.many is not None:
        schema = {"type": "array", "items": schema, "minItems": body.many[0], "maxItems": body.many[1]}
    content = {body.media_type: {"schema": schema}, **{m: {"schema": s} for m, s in body.also.items()}}
    return {"required": body.required, "content": content}


def _operation_id(method: str, path: str) -> str:
    words = re.findall(r"\w+", path.replace(".", "_")) or ["root"]
    return "_".join([method.lower(), *words])


def described(route: ApiRoute, components: Components) -> JSON:
    """The Operation Object of ``route``."""
    method, path, op = route.method, route.path, route.described
    if route.idempotent:
        op = replace(op, responses={**op.responses, **MISMATCH}, headers={**op.headers, **IDEMPOTENT})
    out: JSON = {"operationId": _operation_id(method, path), "summary": op.summary}
    if op.description:
        out["description"] = op.description
    params = path_params(path)
    params += [_parameter(n, "query", QUERY_PARAMS[n], required=False) for n in op.query]
    params += [_parameter(n, "header", p, required=False) for n, p in op.headers.items()]
    if params:
        out["parameters"] = params
    if op.body:
        out["requestBody"] = _request_body(op.body, components)
    out["responses"] = _responses(path, op)
    return out


def openapi_path(path: str) -> str:
    """Starlette's ``{name:convertor}`` -> OpenAPI's ``{name}``."""
    return _PATH_PARAM.sub(r"{\1}", path)


def document(routes: Iterable[ApiRoute], auth: bool = False) -> JSON:
    """The OpenAPI 3.1 document of ``routes``; with ``auth``, each guarded route wants the bearer
    token (``security``, 401 and 403 answers)."""
    components = Components()
    paths: dict[str, JSON] = {}
    for route in routes:
        item = described(route, components)
        if auth:
            _guard(route, item)
        paths.setdefault(openapi_path(route.path), {})[route.method.lower()] = item
    out: JSON = {
        "openapi": "3.1.0",
        "info": {
            "title": "jobledger",
            "version": installed_version(),
            "description": "A job queue whose source of truth is an event ledger; Ocypod's HTTP API.",
        },
        "paths": paths,
        "components": {"schemas": components.schemas, "securitySchemes": SECURITY_SCHEMES},
    }
    if auth:
        out["security"] = [{"bearer": []}]
    return out


def served_routes(app: Starlette) -> list[ApiRoute]:
    """Every route of the API the app serves, in order (the dashboard's pages are not the API's)."""
    return [record for route in app.routes if isinstance(route, ApiPath) for record in route.records]


async def openapi(request: Request) -> Response:
    """``GET /openapi.json``."""
    return JSONResponse(document(served_routes(request.app), getattr(request.app.state, "auth", False)))
