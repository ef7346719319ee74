"""The configuration: Ocypod's TOML sections plus jobledger's own, with one order of precedence.

Values come from, lowest first: the defaults here, the TOML file (with ``${VAR}`` and
``${VAR=default}`` interpolated from the environment, as Ocypod does, on the file's text before it is
parsed), the ``JOBLEDGER_*`` environment variables (:data:`ENV_VARS`), and the command-line flags
(passed in as dotted ``overrides``).  Keys jobledger does not know are named in a warning and
ignored, as Ocypod ignores them.  Durations are held as integer milliseconds and sizes as bytes,
so nothing downstream parses text again.

The sections are frozen dataclasses, each field's bounds and parsing functions in its metadata;
pydantic validates a configuration that needs converting or is wrong, with its messages, and is
not loaded for one that needs neither (:func:`config_from`): a server's start from command-line
flags imports no pydantic.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from jobledger.ledger.durations import parse_ms
from jobledger.ledger.keys import DEFAULT_NAMESPACE
from jobledger.ledger.partitions import MAX_PARTITIONS

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

log = logging.getLogger("jobledger.config")

#: ``JOBLEDGER_*`` environment variable -> the dotted field it sets.  The one place this mapping lives.
ENV_VARS: dict[str, str] = {
    "JOBLEDGER_HOST": "server.host",
    "JOBLEDGER_PORT": "server.port",
    "JOBLEDGER_MAX_BODY_SIZE": "server.max_body_size",
    "JOBLEDGER_SHUTDOWN_TIMEOUT": "server.shutdown_timeout",
    "JOBLEDGER_TIMEOUT_CHECK_INTERVAL": "server.timeout_check_interval",
    "JOBLEDGER_RETRY_CHECK_INTERVAL": "server.retry_check_interval",
    "JOBLEDGER_EXPIRY_CHECK_INTERVAL": "server.expiry_check_interval",
    "JOBLEDGER_NEXT_JOB_DELAY": "server.next_job_delay",
    "JOBLEDGER_IDEMPOTENCY_WINDOW": "server.idempotency_window",
    "JOBLEDGER_MAX_FEEDS_PER_TOKEN": "server.max_feeds_per_token",
    "JOBLEDGER_MAX_FEEDS": "server.max_feeds",
    "JOBLEDGER_READ_ONLY": "server.read_only",
    "JOBLEDGER_AUTH": "server.auth",
    "JOBLEDGER_TLS_CERT": "server.tls_cert",
    "JOBLEDGER_TLS_KEY": "server.tls_key",
    "JOBLEDGER_STRICT": "server.strict",
    "JOBLEDGER_SCHEDULER": "server.scheduler",
    "JOBLEDGER_LOG_LEVEL": "server.log_level",
    "JOBLEDGER_LOG_FORMAT": "server.log_format",
    "JOBLEDGER_ALLOWED_HOSTS": "server.allowed_hosts",
    "JOBLEDGER_FORWARDED_ALLOW_IPS": "server.forwarded_allow_ips",
    "JOBLEDGER_REDIS_URL": "redis.url",
    "JOBLEDGER_NAMESPACE": "redis.key_namespace",
    "JOBLEDGER_PARTITIONS": "redis.partitions",
    "JOBLEDGER_DATA_DIR": "embedded.data_dir",
    "JOBLEDGER_BLOBS_URL": "blobs.url",
    "JOBLEDGER_APPENDFSYNC": "embedded.appendfsync",
    "JOBLEDGER_ARCHIVE_AFTER": "ledger.archive_after",
    "JOBLEDGER_ARCHIVE_DIR": "ledger.archive_dir",
    "JOBLEDGER_ARCHIVE_CHECK_INTERVAL": "ledger.archive_check_interval",
    "JOBLEDGER_SEAL": "ledger.seal",
    "JOBLEDGER_SEAL_INTERVAL": "ledger.seal_interval",
    "JOBLEDGER_SIGNING_KEY": "ledger.signing_key",
    "JOBLEDGER_TRACING": "tracing.enabled",
}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_SIZE_UNITS: dict[str, int] = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 1024,
    "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1000**3, "gb": 1000**3, "gib": 1024**3,
}  # fmt: skip
_LOG_LEVELS = ("critical", "error", "warning", "warn", "info", "debug", "trace")
_INTERPOLATION = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?:=([^}]*))?\}")


class ConfigError(ValueError):
    """The configuration is invalid; the message names the field and says why."""


def parse_size(value: object) -> int:
    """Bytes from an int or a human size: ``"256kB"`` (SI, 1000) or ``"256KiB"`` (binary, 1024)."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (match := _SIZE.match(value)):
        unit = match.group(2).lower()
        if unit not in _SIZE_UNITS:
            raise ValueError(f"unknown size unit {match.group(2)!r} (use B, kB, KiB, MB, MiB, GB, GiB)")
        size = int(float(match.group(1)) * _SIZE_UNITS[unit])
    else:
        raise ValueError(f"{value!r} is not a size (examples: 262144, '256KiB', '1MB')")
    if size <= 0:
        raise ValueError(f"a size must be positive: {value!r}")
    return size


Section = TypeVar("Section")


def rules(
    *,
    ge: int | None = None,
    le: int | None = None,
    before: Callable[[Any], Any] | None = None,
    after: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """A field's metadata: the bounds of a number, and the functions of ours its value goes through
    before (``before``: text to milliseconds, say) and after (``after``) its type is checked; both
    ways of reading a section follow it (see :func:`config_from`)."""
    return {k: v for k, v in (("ge", ge), ("le", le), ("before", before), ("after", after)) if v is not None}


def _names(value: object) -> object:
    """A list, or one comma-separated string (as an environment variable gives it)."""
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


def _level(value: object) -> str:
    level = str(value).strip().lower()
    if level not in _LOG_LEVELS:
        raise ValueError(f"{value!r} is not a log level (one of {', '.join(_LOG_LEVELS)})")
    return "warning" if level == "warn" else level


def _lowered(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _empty_is_none(value: object) -> object:
    """An empty URL (e.g. from ``${REDIS_URL=}``) means "no external server"."""
    return None if isinstance(value, str) and not value.strip() else value


def _namespace(value: str) -> str:
    """The namespace becomes a Redis Cluster hash tag, so it cannot hold braces; empty (Ocypod's
    default, "no prefix") means the default namespace, since an empty hash tag holds no slot."""
    if not value:
        return DEFAULT_NAMESPACE
    if "{" in value or "}" in value:
        raise ValueError(f"{value!r} is not a namespace (without '{{' or '}}')")
    return value


def _expand(value: Path | None) -> Path | None:
    return None if value is None else value.expanduser()


#: A duration field: "30s", "1h15m5s", "1.5h" or seconds in; milliseconds held.
DURATION = rules(before=parse_ms)
#: A size field: 262144, "256kB" or "256KiB" in; bytes held.
SIZE = rules(before=parse_size)

# Every section is frozen, and refuses a key it has no field for (a typo should not be silently
# ignored): see config_from.


@dataclass(frozen=True)
class ServerConfig:
    """``[server]``: Ocypod's HTTP server and background-check settings, plus ``read_only``."""

    host: str = "127.0.0.1"
    port: int = field(default=8023, metadata=rules(ge=0, le=65535))
    max_body_size: int = field(default=262_144, metadata=SIZE)
    shutdown_timeout: int = field(default=30_000, metadata=DURATION)
    timeout_check_interval: int = field(default=30_000, metadata=DURATION)
    retry_check_interval: int = field(default=60_000, metadata=DURATION)
    expiry_check_interval: int = field(default=300_000, metadata=DURATION)
    next_job_delay: int = field(default=0, metadata=DURATION)
    # How long a create's Idempotency-Key is remembered
    idempotency_window: int = field(default=86_400_000, metadata=DURATION)
    # Live feeds one token (or `local`) may hold open
    max_feeds_per_token: int = field(default=20, metadata=rules(ge=1))
    max_feeds: int = field(default=500, metadata=rules(ge=1))  # live feeds this process serves at once
    read_only: bool = False
    auth: bool = False  # every route but /health and /ready wants a bearer token (jobledger token create)
    insecure: bool = False  # serve an address other than loopback without auth (refused otherwise)
    tls_cert: Path | None = None  # with tls_key: serve HTTPS (PEM files)
    tls_key: Path | None = None
    strict: bool = False  # refuse request bodies with keys jobledger does not know (400), not ignore them
    scheduler: bool = True  # run the scheduler's checks in this process (false: leave them to others)
    log_level: str = field(default="info", metadata=rules(before=_level))
    # json: one JSON object per line
    log_format: Literal["text", "json"] = field(default="text", metadata=rules(before=_lowered))
    # Ocypod's; accepted, unused (one event loop)
    threads: int | None = field(default=None, metadata=rules(ge=1))
    # Host names answered besides loopback ones (auth off: every route; auth on: /ui); "*.x" for all under x
    allowed_hosts: list[str] = field(default_factory=list, metadata=rules(before=_names))
    # A client whose request line and headers take longer is cut off
    header_timeout: int = field(default=10_000, metadata=DURATION)
    # Bytes per second a body must keep up, after header_timeout's grace
    min_body_rate: int = field(default=1024, metadata=SIZE)
    # Peers whose X-Forwarded-For / -Proto are believed (addresses or networks; "*": any); none by default
    forwarded_allow_ips: list[str] = field(default_factory=list, metadata=rules(before=_names))


@dataclass(frozen=True)
class RedisConfig:
    """``[redis]``: an external server's URL (None: use the embedded one), the key namespace, and how
    many partitions a new ledger is split into (None: 16 on a Cluster, 1 otherwise; a ledger keeps
    the count it was made with, see :mod:`jobledger.ledger.partitions`)."""

    url: str | None = field(default=None, metadata=rules(before=_empty_is_none))
    key_namespace: str = field(default=DEFAULT_NAMESPACE, metadata=rules(after=_namespace))
    partitions: int | None = field(default=None, metadata=rules(ge=1, le=MAX_PARTITIONS))
    threads: int | None = field(default=None, metadata=rules(ge=1))  # Ocypod's; accepted, unused


@dataclass(frozen=True)
class EmbeddedConfig:
    """``[embedded]``: where the bundled valkey-server keeps its append-only file, and how often it fsyncs."""

    data_dir: Path = field(default=Path("./jobledger-data"), metadata=rules(after=_expand))
    appendfsync: Literal["everysec", "always"] = "everysec"


@dataclass(frozen=True)
class LedgerConfig:
    """``[ledger]``: retention and sealing.  Events older than ``archive_after`` (default 7 days; 0:
    never) are moved from the stream into the archive in the blob store (``[blobs]``) by the
    scheduler, every ``archive_check_interval``, so Redis holds a bounded window of the ledger; replay,
    the feed and job history read them there.  ``archive_dir`` is where archives went before they went
    to the blob store: one kept there is moved into the store by the first archive round (its record
    names the directory; this setting is no longer read).  With ``seal`` on, the scheduler publishes a
    signed checkpoint of the ledger's Merkle tree at least every ``seal_interval`` while events come,
    signed with the key in ``signing_key`` (empty: the data directory's ``<namespace>.ledger.key``,
    made on the first start of a scheduler); only sealed events are archived."""

    archive_after: int = field(default=7 * 86_400_000, metadata=DURATION)
    archive_dir: Path = field(default=Path("./jobledger-archive"), metadata=rules(after=_expand))
    archive_check_interval: int = field(default=3_600_000, metadata=DURATION)
    seal: bool = True
    seal_interval: int = field(default=1000, metadata=rules(ge=1, before=parse_ms))
    signing_key: Path | None = field(default=None, metadata=rules(after=_expand))


@dataclass(frozen=True)
class BlobsConfig:
    """``[blobs]``: where the files of jobs are kept (:mod:`jobledger.blobs`).  ``url`` empty: on local
    disk under ``<embedded.data_dir>/blobs``; a path or ``file://`` URL: on local disk there;
    ``s3://bucket/prefix``, ``gs://bucket/prefix``, ``az://container/prefix``: an object store
    through obstore, with ``options`` (obstore's configuration keys: ``endpoint``, ``region``,
    ``allow_http``, ...) over what it reads from the environment.  Blobs no job refers to are swept
    every ``sweep_interval`` once unreferenced for ``sweep_grace``; staging an upload left behind is
    removed after ``sweep_grace`` too."""

    url: str = ""
    options: dict[str, str] = field(default_factory=dict)
    sweep_interval: int = field(default=600_000, metadata=DURATION)
    sweep_grace: int = field(default=3_600_000, metadata=DURATION)


@dataclass(frozen=True)
class TracingConfig:
    """``[tracing]``: OpenTelemetry spans (the ``otel`` extra, :mod:`jobledger.runtime.tracing`).
    ``enabled`` unset follows the standard environment: on when ``OTEL_TRACES_EXPORTER`` names an
    exporter (not ``none``); true or false decides whatever it says."""

    enabled: bool | None = None


@dataclass(frozen=True)
class Config:
    """The whole configuration of one jobledger process."""

    server: ServerConfig = field(default_factory=ServerConfig)
    redis: RedisConfig = field(default_factory=RedisConfig)
    embedded: EmbeddedConfig = field(default_factory=EmbeddedConfig)
    ledger: LedgerConfig = field(default_factory=LedgerConfig)
    blobs: BlobsConfig = field(default_factory=BlobsConfig)
    tracing: TracingConfig = field(default_factory=TracingConfig)
    queue: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``[launcher.NAME]`` sections: named launchers declared at every start (as ``PUT /launcher/NAME``)
    launcher: dict[str, dict[str, Any]] = field(default_factory=dict)


def interpolate(text: str, environ: Mapping[str, str]) -> str:
    """Replace ``${VAR}`` / ``${VAR=default}`` in a TOML file's text, before it is parsed (so
    ``port = ${PORT=8023}`` gives a number, and ``[queue.${PREFIX=}jobs]`` a table name, as in
    Ocypod).  Inside a basic string ("...") the value is escaped, so any value stays one string;
    inside a literal string ('...') it goes in as it is, and may not hold the quote.  ``$${VAR}``
    writes ``${VAR}`` itself; comments are left alone.  A variable that is not set and has no
    default is an error naming it and its line."""
    out: list[str] = []
    for start, end, quote in _stretches(text):
        piece = text[start:end]
        if quote == "#" or "${" not in piece:
            out.append(piece)
            continue
        first = text.count("\n", 0, start) + 1
        out.append(_INTERPOLATION.sub(partial(_value, environ, quote, piece, first), piece))
    return "".join(out)


_QUOTES = ('"""', "'''", '"', "'")


def _stretches(text: str) -> list[tuple[int, int, str | None]]:
    """The text cut by what each stretch is in: bare text (None), a string (its opening quote, multi-
    line ones alike) or a comment ("#"); enough of TOML's lexer to know how to write a value in place."""
    found: list[tuple[int, int, str | None]] = []
    i = start = 0
    while i < len(text):
        quote = next((q for q in _QUOTES if text.startswith(q, i)), "#" if text[i] == "#" else None)
        if quote is None:
            i += 1
            continue
        end = _closing(text, i, quote)
        found += [(start, i, None), (i, end, quote)]
        i = start = end
    return [*found, (start, len(text), None)]


def _closing(text: str, i: int, quote: str) -> int:
    """Just after the end of the string or comment that ``quote`` opens at ``i``."""
    if quote == "#":
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    j = i + len(quote)
    while j < len(text):
        if quote[0] == '"' and text[j] == "\\":
            j += 2
        elif text.startswith(quote, j):
            return j + len(quote)
        elif len(quote) == 1 and text[j] == "\n":
            return j  # an unclosed string: the TOML parser says so
        else:
            j += 1
    return len(text)


def _value(
    environ: Mapping[str, str], quote: str | None, piece: str, first: int, match: re.Match[str]
) -> str:
    """What one ``${...}`` of ``piece`` (a stretch starting on line ``first``) becomes, written for
    where it stands."""
    line = first + piece.count("\n", 0, match.start())
    escaped, name, default = match.groups()
    if escaped:
        return match.group(0)[1:]
    value = environ.get(name, default)
    if value is None:
        hint = f"set it, or give a default with ${{{name}=default}}"
        raise ConfigError(f"line {line}: environment variable {name} is not set ({hint})")
    if quote is not None and quote[0] == '"':
        return json.dumps(value, ensure_ascii=False)[1:-1]  # JSON's string escapes are TOML's too
    if quote is not None and ("'" in value or (len(quote) == 1 and "\n" in value)):
        raise ConfigError(f'line {line}: the value of {name} cannot go inside a literal string; use "..."')
    return value


def _within(where: str, key: str) -> bool:
    """Whether the dotted field ``where`` is ``key`` or inside it ("" is the whole file)."""
    return not key or where == key or where.startswith(key + ".")


def _set_dotted(raw: dict[str, Any], dotted: str, value: object) -> None:
    """Set ``raw["a"]["b"] = value`` for ``"a.b"``, creating the sections on the way."""
    *sections, field = dotted.split(".")
    if not sections:
        raise ConfigError(f"{dotted}: an override names a field as 'section.field'")
    node = raw
    for name in sections:
        child = node.setdefault(name, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{dotted}: {name} is a value, not a section")
        node = child
    node[field] = value


def _read_toml(path: Path, environ: Mapping[str, str]) -> dict[str, Any]:
    """The file, interpolated from ``environ``, then parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path}: not found") from exc
    try:
        return tomllib.loads(interpolate(text, environ))
    except ConfigError as exc:
        raise ConfigError(f"config file {path}, {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: not valid TOML (after interpolation): {exc}") from exc


#: Each section's fields' types, read once: every configuration read walks them.
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(section: type) -> dict[str, Any]:
    hints = _HINTS.get(section)
    if hints is None:
        hints = _HINTS[section] = typing.get_type_hints(section)
    return hints


def _known(raw: dict[str, Any], origin: str) -> dict[str, Any]:
    """``raw`` without the keys jobledger does not know, each named in a warning (Ocypod ignores
    them too); queue sections are checked against the queue settings (whose models are loaded only
    when the file has any)."""
    known, unknown = _known_part(Config, raw)
    queues = known.get("queue")
    if isinstance(queues, dict) and queues:
        from jobledger.ledger.requests import QueueSettings, known_part

        for name, section in queues.items():
            if isinstance(section, dict):
                queues[name], more = known_part(QueueSettings, section, f"queue.{name}.")
                unknown += more
    for key in unknown:
        log.warning("%s: unknown key %s, ignored", origin, key)
    return known


def _known_part(section: type, data: Mapping[str, Any], where: str = "") -> tuple[dict[str, Any], list[str]]:
    """``data`` without the keys ``section`` has no field for (inside nested sections too), and
    those keys, dotted from the top."""
    hints = _hints(section)
    known: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in data.items():
        if key not in hints:
            unknown.append(where + key)
            continue
        if is_dataclass(hints[key]) and isinstance(value, Mapping):
            value, deeper = _known_part(hints[key], value, f"{where}{key}.")
            unknown += deeper
        known[key] = value
    return known, unknown


def _explain(error: ValidationError, origins: Mapping[str, str]) -> ConfigError:
    """One readable line per problem, naming the field and where its value came from."""
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "config"
        message = item["msg"].removeprefix("Value error, ")
        got = repr(item.get("input"))
        if got not in message:
            message += f" (got {got})"
        origin = next((o for key, o in origins.items() if _within(where, key)), None)
        lines.append(f"{where}: {message}" + (f" [from {origin}]" if origin else ""))
    return ConfigError("invalid configuration: " + "; ".join(lines))


def config_from(raw: Mapping[str, Any], origins: Mapping[str, str] | None = None) -> Config:
    """The configuration ``raw`` (nested sections of plain values) gives, validated; a
    :class:`ConfigError` naming each bad field (and where ``origins`` says its value came from).

    pydantic is the validator, and its messages the errors'.  It is loaded only when needed: a
    configuration whose every value is already of its field's type once our own functions have read
    it (a duration's text made milliseconds, a log level lowered) and within its bounds, as a
    command line's flags and most files give it, is taken as it is (:func:`_exact`), which is what
    pydantic makes of it too (the tests hold the two to that); anything else (a port in text, a
    key no section has, a number out of its bounds) goes to pydantic, to be converted or refused,
    so a server's start imports no pydantic unless its configuration needs converting."""
    exact = _exact(Config, raw)
    if exact is not None:
        return exact
    from pydantic import ValidationError

    try:
        validated = _model(Config).model_validate(raw)
    except ValidationError as exc:
        raise _explain(exc, origins or {}) from None
    return _section_of(Config, validated)


def _exact(section: type[Section], raw: object) -> Section | None:
    """``section`` from ``raw`` when each value, after its field's ``before`` function, is already
    of the field's type and within its bounds (and passes its ``after`` function); None when any
    is not (or raises), for pydantic to convert or explain."""
    if type(raw) is not dict:
        return None
    hints = _hints(section)
    given: dict[str, Any] = {}
    for item in fields(section):  # type: ignore[arg-type]
        if item.name not in raw:
            continue
        value, meta, kind = raw[item.name], item.metadata, hints[item.name]
        try:
            value = meta["before"](value) if "before" in meta else value
        except (ValueError, AssertionError):  # pydantic's to explain (as it raises anything else)
            return None
        if isinstance(kind, type) and is_dataclass(kind):
            value = _exact(kind, value)
            if value is None:
                return None
        elif not _is_a(kind, value) or not _within_bounds(meta, value):
            return None
        try:
            given[item.name] = meta["after"](value) if "after" in meta else value
        except (ValueError, AssertionError):
            return None
    if len(given) != len(raw):
        return None  # a key the section has no field for
    return section(**given)


def _is_a(kind: Any, value: object) -> bool:
    """Whether ``value`` is of type ``kind`` as it is, with nothing to convert."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return True
    if origin is types.UnionType or origin is typing.Union:
        return any(_is_a(arg, value) for arg in args)
    if origin is Literal:
        return any(type(value) is type(arg) and value == arg for arg in args)
    if origin is list:
        return type(value) is list and all(_is_a(args[0], v) for v in value)
    if origin is dict:
        return type(value) is dict and all(_is_a(args[0], k) and _is_a(args[1], v) for k, v in value.items())
    if kind is Path:
        return isinstance(value, Path)
    return type(value) is (type(None) if kind is None else kind)


def _within_bounds(meta: Mapping[str, Any], value: object) -> bool:
    if not isinstance(value, int):
        return True
    return bool(meta.get("ge", value) <= value <= meta.get("le", value))


@cache
def _model(section: type) -> type[BaseModel]:
    """The pydantic model of a section: its fields, defaults, bounds and functions (extra keys
    forbidden, frozen), made from the dataclass the first time a configuration needs it."""
    from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, create_model

    definitions: dict[str, Any] = {}
    for item, kind in zip(fields(section), _hints(section).values(), strict=True):  # type: ignore[arg-type]
        meta, nested = item.metadata, is_dataclass(kind)
        if nested:
            kind = _model(kind)  # type: ignore[arg-type]
        checks = [
            *([BeforeValidator(meta["before"])] if "before" in meta else []),
            *([AfterValidator(meta["after"])] if "after" in meta else []),
        ]
        bounds = {k: meta[k] for k in ("ge", "le") if k in meta}
        if item.default_factory is not MISSING:
            default = Field(default_factory=kind if nested else item.default_factory, **bounds)
        else:
            default = Field(item.default, **bounds)
        definitions[item.name] = (typing.Annotated[kind, *checks] if checks else kind, default)
    config = ConfigDict(extra="forbid", frozen=True)
    return create_model(section.__name__, __config__=config, **definitions)  # type: ignore[call-overload,no-any-return]


def _section_of(section: type[Section], validated: BaseModel) -> Section:
    """The dataclass of ``section`` holding what pydantic validated."""
    hints = _hints(section)
    values = {}
    for name in hints:
        value = getattr(validated, name)
        values[name] = _section_of(hints[name], value) if is_dataclass(hints[name]) else value
    return section(**values)


def load_config(
    path: str | Path | None,
    overrides: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Build the configuration: defaults < TOML file < ``JOBLEDGER_*`` variables < ``overrides``.

    ``overrides`` maps dotted keys (``"redis.url"``) to values from command-line flags; None values
    are flags that were not given and are ignored.  Raises :class:`ConfigError`.
    """
    env = os.environ if environ is None else environ
    raw: dict[str, Any] = {}
    origins: dict[str, str] = {}
    if path is not None:
        raw = _known(_read_toml(Path(path), env), f"config file {path}")
        origins[""] = f"config file {path}"
    for var, dotted in ENV_VARS.items():
        if env.get(var, "") != "":
            _set_dotted(raw, dotted, env[var])
            origins[dotted] = f"environment variable {var}"
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(raw, dotted, value)
            origins[dotted] = "the command line"
    return config_from(raw, dict(reversed(origins.items())))
