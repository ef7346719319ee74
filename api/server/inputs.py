"""Request bodies and parameters: JSON read within ``max_body_size`` (413 beyond), parsed into the
command's pydantic model (400 with what was wrong), and path parameters checked.

The app's middleware and the token check use this module as a server starts; the request models
and commands it hands requests to load with the first request that needs them."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobledger.contract.traceparent import HEADER as TRACEPARENT_HEADER
from jobledger.contract.traceparent import taken
from jobledger.ledger.errors import BadRequest, JobLedgerError, NotFound

if TYPE_CHECKING:
    from pydantic import BaseModel

    from jobledger.ledger.commands import Idempotency

log = logging.getLogger("jobledger.api")

#: The response header naming the body keys a request sent that were ignored.
IGNORED_HEADER = "x-jobledger-ignored-keys"
_IGNORED = "jobledger.ignored_keys"  # where a request's ignored keys wait in its ASGI scope

M = TypeVar("M", bound="BaseModel")

#: Arrays / objects nested deeper than this are refused, well inside Python's recursion limit.
MAX_DEPTH = 512
_TOO_DEEP = f"request body is nested too deeply: at most {MAX_DEPTH} levels"


class TooLarge(JobLedgerError):
    code = "TOO_LARGE"
    status = 413


async def read_body(request: Request) -> bytes:
    """The raw body, refused with 413 as soon as it passes the configured limit."""
    limit: int = request.app.state.max_body_size
    declared = request.headers.get("content-length")
    if declared and _digits(declared) and int(declared) > limit:
        raise TooLarge(f"body of {declared} bytes is over the limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _depth(value: Any) -> int:
    """How many arrays / objects deep ``value`` nests, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _strict_json(raw: bytes) -> Any:
    """Standard JSON only: no NaN / Infinity (or numbers that overflow to them), no lone surrogates,
    at most MAX_DEPTH deep, so whatever is accepted can be stored, encoded for Redis and read back
    (reading goes a few frames deeper than writing: near the recursion limit, a write could pass
    and every read of the job fail)."""
    data = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    if b"\\u" in raw:  # only an escape can make a lone surrogate
        json.dumps(data, ensure_ascii=False).encode()
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth(data) > MAX_DEPTH:
        raise BadRequest(_TOO_DEEP)
    return data


class UnsupportedMediaType(JobLedgerError):
    code = "UNSUPPORTED_MEDIA_TYPE"
    status = 415


def json_media_type(content_type: str | None) -> bool:
    """Whether a Content-Type names JSON: ``application/json`` or ``application/*+json``, with any
    parameters (``charset=utf-8``)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _sends_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    if length is not None:
        return length.strip() != "0"
    return "transfer-encoding" in request.headers


async def read_json(request: Request, default: Any = ...) -> Any:
    """The body as JSON; ``default`` when the body is empty (if given), else 400.  A body is read
    only when its Content-Type says JSON (415 otherwise, before a byte is read): a web page can send
    text/plain or a form across sites without asking, never application/json."""
    content_type = request.headers.get("content-type")
    if json_media_type(content_type):
        return parse_json(await read_body(request), default)
    if _sends_body(request):
        named = repr(content_type[:100]) if content_type else "none"
        raise UnsupportedMediaType(f"a JSON body needs Content-Type: application/json, not {named}")
    return parse_json(b"", default)


def parse_json(raw: bytes, default: Any = ..., what: str = "request body") -> Any:
    """``raw`` as JSON (see :func:`_strict_json`); ``default`` when it is empty (if given), else 400.
    ``what`` names it in the error (a multipart body's ``job`` part)."""
    if not raw.strip():
        if default is not ...:
            return default
        raise BadRequest(f"{what} must be JSON, and it is empty")
    try:
        return _strict_json(raw)
    except UnicodeEncodeError:
        raise BadRequest(f"{what} is not valid JSON: a string holds a lone surrogate") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, the checks above
        raise BadRequest(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadRequest(_TOO_DEEP) from None


async def read_model(request: Request, model: type[M], empty_ok: bool = False, *, lenient: bool = False) -> M:
    """The body parsed into ``model``; it must be a JSON object.  ``lenient`` (Ocypod's bodies):
    keys the model does not know are ignored, as Ocypod ignores them, and named
    (:func:`ignore_keys`); otherwise they are a 400."""
    model_of, _ = await read_model_and_body(request, model, empty_ok, lenient=lenient)
    return model_of


async def read_model_and_body(
    request: Request, model: type[M], empty_ok: bool = False, *, lenient: bool = False
) -> tuple[M, dict[str, Any]]:
    """As :func:`read_model`, with the body's JSON object as it was sent."""
    data = await read_json(request, {} if empty_ok else ...)
    if not isinstance(data, dict):
        raise BadRequest(f"request body must be a JSON object, not {type(data).__name__}")
    return (parse_model(request, model, data) if lenient else model.model_validate(data)), data


#: The request header that makes a create safe to send again.
IDEMPOTENCY_HEADER = "idempotency-key"
_IDEMPOTENCY_KEY = re.compile(r"[\x20-\x7e]{1,255}")


def idempotency(request: Request, queue: str, body: Any) -> Idempotency | None:
    """The request's Idempotency-Key (None without the header, or on a route whose record is not
    ``idempotent``): 1 to 255 printable ASCII characters, else 400.  Its request hash is the SHA-256
    of the request's canonical form: the route (``METHOD /path``), the queue and the body parsed and
    dumped again with sorted keys, so that the same request, however its JSON is spaced or its keys
    ordered, has the same hash."""
    key = request.headers.get(IDEMPOTENCY_HEADER)
    route = request.state.route
    if key is None or not route.idempotent:
        return None
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise BadRequest("Idempotency-Key must be 1 to 255 printable ASCII characters")
    from jobledger.ledger.commands import Idempotency

    canonical = json.dumps(
        [route.name, queue, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Idempotency(key, digest, request.app.state.idempotency_window)


def traceparent(request: Request) -> str | None:
    """The request's W3C ``traceparent`` header, which a create records in its job_created; None
    without one, or for one that is no version-00 traceparent (ignored, as Trace Context says)."""
    return taken(request.headers.get(TRACEPARENT_HEADER))


#: The response header set on an answer given again for an Idempotency-Key (nothing was appended).
REPLAYED_HEADER = "idempotent-replayed"


def replayed(again: bool) -> dict[str, str]:
    """The headers that mark an answer given again."""
    return {REPLAYED_HEADER: "true"} if again else {}


def parse_model(request: Request, model: type[M], data: Mapping[str, Any], where: str = "") -> M:
    """``data`` (one JSON object of the body; ``where`` prefixes its keys' names) into ``model``,
    keys it does not know ignored and named (:func:`ignore_keys`)."""
    from jobledger.ledger.requests import known_part

    known, unknown = known_part(model, data, where)
    ignore_keys(request, unknown)
    return model.model_validate(known)


def ignore_keys(request: Request, keys: list[str]) -> None:
    """Body keys jobledger does not know: 400 on a strict server (``[server] strict``); otherwise
    ignored, named in a warning and in the answer's x-jobledger-ignored-keys header."""
    if not keys:
        return
    names = key_names(keys)
    if request.app.state.strict:
        raise BadRequest(f"unknown field(s) {names} (this server is strict: unknown fields are refused)")
    log.warning("%s %s: ignored unknown field(s) %s", request.method, request.url.path, names)
    request.scope.setdefault(_IGNORED, []).extend(keys)


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]+")
MAX_NAMED = 20


def key_names(keys: list[str]) -> str:
    """Keys as one line fit for a header: plain ones as they are, others as JSON strings (ASCII),
    at most MAX_NAMED of them."""
    shown = [k if _PLAIN_KEY.fullmatch(k) else json.dumps(k) for k in keys[:MAX_NAMED]]
    more = f" and {len(keys) - MAX_NAMED} more" if len(keys) > MAX_NAMED else ""
    return ", ".join(shown) + more


class IgnoredKeysHeader:
    """ASGI middleware: the x-jobledger-ignored-keys header on the answer of a request whose body
    had keys that were ignored, whatever the answer (error answers included)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_named(message: Message) -> None:
            ignored = scope.get(_IGNORED)
            if ignored and message["type"] == "http.response.start":
                header = (IGNORED_HEADER.encode(), key_names(ignored).encode())
                message = {**message, "headers": [*message.get("headers", []), header]}
            await send(message)

        await self.app(scope, receive, send_named)


def field_names(request: Request, known: tuple[str, ...], what: str) -> tuple[str, ...] | None:
    """The names ``?fields=`` lists, comma-separated (None when it is absent), each one of ``known``;
    a 400 naming those that are not (``what``: whose fields, for the message)."""
    raw = request.query_params.get("fields")
    if raw is None:
        return None
    names = tuple(f.strip() for f in raw.split(",") if f.strip())
    unknown = [f for f in names if f not in known]
    if unknown or not names:
        raise BadRequest(f"unknown {what} field(s) {', '.join(unknown) or raw!r}; known: {', '.join(known)}")
    return names


def queue_name(request: Request) -> str:
    from jobledger.ledger.requests import checked_queue_name

    name: str = request.path_params["queue"]
    try:
        return checked_queue_name(name)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def _digits(raw: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also admits e.g. "²", which ``int`` refuses."""
    return raw.isascii() and raw.isdigit()


#: The largest id or count a path or query may name: Redis's signed 64-bit integers.
MAX_ID = 2**63 - 1


def in_range(raw: str) -> bool:
    """Whether ASCII digits ``raw`` stand for at most MAX_ID, told without converting a long text
    (Python refuses to convert more than a few thousand digits, and Redis more than 64 bits)."""
    significant = raw.lstrip("0")
    return len(significant) < len(str(MAX_ID)) or (
        len(significant) == len(str(MAX_ID)) and int(significant) <= MAX_ID
    )


def _number(raw: str, name: str) -> int:
    """ASCII digits ``raw`` as a number, 400 beyond MAX_ID."""
    if not in_range(raw):
        raise BadRequest(
            f"{name} is out of range: at most {MAX_ID}, not {raw[:30]!r}{'...' if len(raw) > 30 else ''}"
        )
    return int(raw)


def valid_job_id(raw: str, name: str = "id") -> int | None:
    """``raw`` as a job (or launcher) id, or None when it is not a positive integer (it names none,
    as in Ocypod); a number beyond MAX_ID is a 400, never sent to Redis."""
    if not _digits(raw):
        return None
    value = _number(raw, name)
    return value if value >= 1 else None


def job_id(request: Request) -> int:
    """The path's job id; one that is not a positive integer names no job (404)."""
    raw: str = request.path_params["job_id"]
    found = valid_job_id(raw, "job id")
    if found is None:
        raise NotFound(f"job {raw!r} does not exist")
    return found


def attempt(request: Request, body_attempt: int | None = None) -> int | None:
    """The attempt an update acts for: the body's ``attempt``, else ``?attempt=N``, else none."""
    if body_attempt is not None:
        return body_attempt
    raw = request.query_params.get("attempt")
    if raw is None:
        return None
    if not _digits(raw) or _number(raw, "attempt") < 1:
        raise BadRequest(f"attempt must be a positive integer, not {raw[:30]!r}")
    return int(raw)


def positive_int(request: Request, name: str, default: int, most: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not _digits(raw) or not in_range(raw) or not 1 <= int(raw) <= most:
        raise BadRequest(f"{name} must be an integer from 1 to {most}, not {raw[:30]!r}")
    return int(raw)


def bounded_int(raw: str, name: str) -> int:
    """A query's count or cursor: ASCII digits, 0 to MAX_ID, else 400."""
    if not _digits(raw):
        raise BadRequest(f"{name} must be a whole number, not {raw[:30]!r}")
    return _number(raw, name)


#: Tags have 1 to 255 characters, as job options do (``jobledger.ledger.requests.Tag``).
MAX_TAG = 255


def checked_tag(tag: str) -> str:
    """A tag from a path or query: refused with 400 unless it has 1 to MAX_TAG characters."""
    if not 1 <= len(tag) <= MAX_TAG:
        raise BadRequest(f"invalid tag: a tag has 1 to {MAX_TAG} characters")
    return tag
