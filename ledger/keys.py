"""Every Redis key of a ledger, built in one place.

All keys start with ``{NAMESPACE}:``; the braces make the namespace a Redis Cluster hash tag, so every
key of one ledger lives in one slot and every Lua script is cluster-safe.  Scripts receive the prefix
as ``KEYS[1]`` and build the rest with helper functions that :func:`lua_prelude` generates from the
same :data:`TEMPLATES` table, so the naming exists once, here (the composer then writes each call
of a parametrized helper out in place, :func:`lua_inline_keys`, so that no script builds closures
for them at every run).

Generations.  The ledger's own keys (:data:`LEDGER`: the stream, its ``clock``, the ``generation``
pointer, the bookkeeping of the archive and of the blob collector) sit right under the prefix.  The
projections sit there too in generation 0 (no ``generation`` key), and under ``{NAMESPACE}:g<N>:``
once an online rebuild (:mod:`jobledger.replay.swap`) has built generation N beside them and
switched the pointer.  Scripts resolve the live generation themselves
(the prelude's one GET); Python reads resolve it in the same MULTI as the read
(:mod:`jobledger.ledger.runner`).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

DEFAULT_NAMESPACE = "jobledger"

#: name -> template; ``{x}`` fields are the key's parameters.  Fixed keys have no parameters.
TEMPLATES: dict[str, str] = {
    "events": "events",  # the ledger: one stream holding every event
    "generation": "generation",  # which generation of projections is live; absent: 0 (unprefixed)
    "archive": "archive",  # retention's record: where archived events are, up to which (hash)
    "archive_lock": "archive:lock",  # held by the scheduler archiving a round (string)
    # the sealer's bookkeeping: the size, last event id and root of the latest checkpoint it
    # published outside Redis (hash; the archive trims no event after `last`); its lock (string)
    "seal": "seal",
    "seal_lock": "seal:lock",
    # the blob collector's bookkeeping: SHA-256 -> when (ms) it first saw that stored blob named by
    # no job, or ``deleting:<ms>`` while it deletes it (hash); its counters (hash); its lock (string)
    "blob_unmarked": "blobs:unmarked",
    "blob_sweep": "blobs:sweep",
    "blob_sweep_lock": "blobs:sweep:lock",
    # the queues a blob was stored for with PUT /blob?queue=Q, before any job names it: who may
    # name it (set; bookkeeping of the store, like the collector's, and deleted when it sweeps the blob)
    "blob_uploads": "blobs:uploads:{sha256}",
    # a ledger split into partitions: in the base namespace, how many (string); in each partition's,
    # "count:index" (string), from which its ids are handed out (see jobledger.ledger.partitions)
    "partitions": "partitions",
    "partition": "partition",
    # in the home partition's namespace of a split ledger: where each queue was placed, name ->
    # partition, and how many queues each partition holds (hashes; see jobledger.ledger.placements)
    "placements": "placements",
    "placement_load": "placements:load",
    "clock": "clock",  # the latest `at` in the stream: no command stamps an event earlier (string, ms)
    "job_id": "job_id",  # last job id handed out
    "seq": "seq",  # enqueue sequence: FIFO order within a priority
    "stats": "stats",  # global statistics counters but total_jobs_created, which is job_id (hash)
    "queues": "queues",  # names of existing queues (set)
    "due_run": "due:run",  # running jobs by the time they time out (zset)
    "due_retry": "due:retry",  # failed / timed-out jobs waiting to retry, by retry time (zset)
    "due_expire": "due:expire",  # ended jobs by expiry time (zset)
    "due_release": "due:release",  # scheduled jobs by run_at (zset)
    "due_queued": "due:queued",  # queued jobs by the end of their max_queued_time (zset)
    "due_idempotency": "due:idempotency",  # Idempotency-Keys by the end of their window (zset)
    # a create's Idempotency-Key, as "owner:key" (the sender's: a token's name or local; the key
    # alone if recorded before keys had owners): request_hash, answer, until, queue (hash)
    "idempotency": "idem:{key}",
    "job": "job:{id}",  # the job's fields (hash)
    "history": "history:{id}",  # ids of the job's events, oldest first (list); outlives the job
    "queue": "queue:{name}",  # the queue's settings (hash)
    "queued_ids": "queue:{name}:queued",  # the queue's queued job ids by priority then FIFO (zset)
    "queue_status": "queue:{name}:{status}",  # job ids of the queue with this status (zset, score id)
    "queue_unique": "queue:{name}:unique",  # unique_key -> id of the live job holding it (hash)
    # quotas: queued jobs with a quota_key wait in their key's lane, not in queued_ids
    "queue_lane": "queue:{name}:lane:{key}",  # queued job ids with this quota_key (zset, like queued_ids)
    "queue_lanes": "queue:{name}:lanes",  # quota keys whose lane is not empty (set)
    "queue_laned": "queue:{name}:laned",  # how many queued jobs wait in lanes (string)
    "queue_heads": "queue:{name}:heads",  # key -> score of its lane's head, for keys under quota (zset)
    "queue_keys": "queue:{name}:keys",  # key -> how many of its jobs run (hash)
    # the last hour's throughput: minute % 60 -> "minute:completed:failed" (hash; a slot whose minute is
    # over an hour old is stale, and is reset by the next end counted in it)
    "queue_throughput": "queue:{name}:throughput",
    # queued job ids by when they joined the queue (created, released, requeued, handed back): the
    # oldest one's age is what a metric shows (zset, score ms; quota lanes included)
    "queue_waiting": "queue:{name}:waiting",
    # lifetime counts of the queue's job events (created, started, completed, failed, timed_out,
    # cancelled, expired, returned) and the wait and run time histograms: "wait:<bound ms>" and
    # "wait:inf" count the waits in each bucket (not cumulative), "wait:sum" adds them up in ms;
    # "run:..." likewise (hash; kept when the queue is deleted, like its throughput)
    "queue_totals": "queue:{name}:totals",
    "tag": "tag:{tag}",  # ids of jobs with this tag (set)
    # a bulk operation, under its id (its bulk_started event's): in the home partition its action,
    # filter, queue, start and finish; in each partition, how many of its jobs' events it holds (hash)
    "bulk": "bulk:{operation}",
    # SHA-256 -> how many files and results of jobs still in the projections name that blob (hash); a
    # blob none names can be swept from the blob store
    "blob_refs": "blobs",
    # queue -> how many files and results of that queue's jobs name the blob (hash): a token that may
    # read one of those queues may name the blob in a job of its own
    "blob_queues": "blob:{sha256}",
    # launchers: they create jobs on a queue from a template, on a schedule or on matching events
    "launcher_id": "launcher_id",  # last launcher id handed out
    "launchers": "launchers",  # ids of existing launchers (set)
    "launcher_names": "launchers:names",  # name -> id of each named launcher (hash)
    "event_launchers": "launchers:event",  # ids of the @event launchers: what the follower matches (set)
    "due_launch": "due:launch",  # launchers by their next due time (zset)
    "launcher": "launcher:{id}",  # the launcher's spec and counters (hash)
    "launcher_pending": "launcher:{id}:pending",  # ids of its jobs that have not ended (set)
    # API tokens: looked up by the SHA-256 (hex) of the secret a request presents
    "token": "token:{digest}",  # the token's name, scopes (JSON list) and digest (hash)
    "tokens": "tokens",  # name -> digest of every live token (hash)
}

#: Keys of the ledger itself, under the namespace prefix whatever the generation of the projections.
LEDGER = frozenset(
    {"events", "generation", "clock", "archive", "archive_lock", "seal", "seal_lock"}
) | frozenset({"blob_unmarked", "blob_sweep", "blob_sweep_lock", "blob_uploads", "partitions", "partition"})
LEDGER |= frozenset({"placements", "placement_load"})
_LEDGER_RELATIVE = frozenset(TEMPLATES[name] for name in LEDGER if "{" not in TEMPLATES[name])
_GENERATION_KEY = re.compile(r"^g\d+:")

#: Templates of earlier layouts -> the name in :data:`TEMPLATES` of the key that holds their data now.
#: Projections built before a rename keep the old keys until they are rebuilt (``jobledger replay
#: rebuild --swap`` builds a new generation under the current names); ``replay verify`` names them.
FORMER: dict[str, str] = {"queue:{name}:jobs": "queued_ids"}


def _matcher(template: str) -> re.Pattern[str]:
    parts = [
        re.escape(literal) + ("[^:]+" if field else "")
        for literal, field, _, _ in string.Formatter().parse(template)
    ]
    return re.compile("^" + "".join(parts) + "$")


_FORMER = [(_matcher(old), new) for old, new in FORMER.items()]
#: The ledger's own keys that take parameters, as patterns (the fixed ones are :data:`_LEDGER_RELATIVE`).
_LEDGER_PATTERNS = [_matcher(TEMPLATES[name]) for name in sorted(LEDGER) if "{" in TEMPLATES[name]]


def former_key(relative: str) -> str | None:
    """For a key (prefix removed) named as an earlier layout named it, the current template it moved
    to (e.g. ``queue:{name}:queued``); None for any other key."""
    for pattern, new in _FORMER:
        if pattern.match(relative):
            return TEMPLATES[new]
    return None


_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,255}$")


def valid_queue_name(name: str) -> bool:
    """Queue names are 1-255 characters of ``A-Z a-z 0-9 _ - .`` (no ``:`` so keys never collide)."""
    return bool(_QUEUE_NAME.match(name))


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


@dataclass(frozen=True)
class Keys:
    """Key builder for one namespace, its projections those of ``generation``."""

    namespace: str = DEFAULT_NAMESPACE
    generation: int = 0

    @property
    def ledger_prefix(self) -> str:
        """The prefix of the ledger's own keys, and what scripts receive as ``KEYS[1]``."""
        return f"{{{self.namespace}}}:"

    @property
    def prefix(self) -> str:
        """The prefix of the projections' keys."""
        gen = f"g{self.generation}:" if self.generation else ""
        return self.ledger_prefix + gen

    def build(self, template: str, /, **params: object) -> str:
        """The key of :data:`TEMPLATES` named ``template``, its fields filled from ``params``."""
        prefix = self.ledger_prefix if template in LEDGER else self.prefix
        return prefix + TEMPLATES[template].format(**params)

    def with_generation(self, generation: int) -> Keys:
        return Keys(self.namespace, generation)

    def owns(self, relative: str) -> bool:
        """Whether a key under :attr:`prefix` (prefix removed) is a projection of this generation: not
        a ledger key, and in generation 0 not a key of another generation either."""
        if relative in _LEDGER_RELATIVE or any(p.match(relative) for p in _LEDGER_PATTERNS):
            return False
        return not (self.generation == 0 and _GENERATION_KEY.match(relative))

    @property
    def events(self) -> str:
        return self.build("events")

    def job(self, job_id: int | str) -> str:
        return self.build("job", id=job_id)

    def history(self, job_id: int | str) -> str:
        return self.build("history", id=job_id)

    def queue(self, name: str) -> str:
        return self.build("queue", name=name)

    def queued_ids(self, name: str) -> str:
        return self.build("queued_ids", name=name)

    def queue_status(self, name: str, status: str) -> str:
        return self.build("queue_status", name=name, status=status)

    def tag(self, tag: str) -> str:
        return self.build("tag", tag=tag)

    @property
    def blob_refs(self) -> str:
        return self.build("blob_refs")

    def pattern(self) -> str:
        """A SCAN pattern matching every projection key of this generation (in generation 0, every
        key of the namespace: filter with :meth:`owns`)."""
        escaped = re.sub(r"([*?\[\]\\])", r"\\\1", self.prefix)
        return escaped + "*"


def lua_prelude(names: set[str] | None = None, clock: bool = False) -> str:
    """Lua definitions of the keys named (all by default): ``K.events`` for fixed keys,
    ``K.job(id)`` for the others.  ``L`` is the ledger's prefix (``KEYS[1]``), ``P`` the live
    generation's (the same when ``KEYS[1]`` is itself a generation's prefix, as in replay).
    With ``clock``, ``CLOCK`` is the ledger's clock (false when unset), read in the same call."""
    generation, clock_key = TEMPLATES["generation"], TEMPLATES["clock"]
    read = (
        f"local G, CLOCK = unpack(redis.call('MGET', L .. {generation!r}, L .. {clock_key!r}))"
        if clock
        else f"local G = redis.call('GET', L .. {generation!r})"
    )
    lines = ["local L = KEYS[1]", read, "local P = G and (L .. 'g' .. G .. ':') or L", "local K = {"]
    # one table constructor: Lua sizes the table once instead of growing it key by key
    for name, template in TEMPLATES.items():
        if names is not None and name not in names:
            continue
        params = _fields(template)
        if not params:
            lines.append(f"  {name} = {'L' if name in LEDGER else 'P'} .. {template!r},")
            continue
        parts = []
        for literal, field, _, _ in string.Formatter().parse(template):
            if literal:
                parts.append(repr(literal))
            if field:
                parts.append(field)
        body = " .. ".join(["L" if name in LEDGER else "P", *parts])
        lines.append(f"  {name} = function({', '.join(params)}) return {body} end,")
    lines.append("}")
    return "\n".join(lines) + "\n"


_KEY_CALL = re.compile(r"\bK\.(\w+)\(")


def _template_expr(name: str, args: list[str]) -> str:
    """``P .. 'literal' .. (arg) ...``: a parametrized key's template with its arguments in place
    (``L ..`` for a key of the ledger itself)."""
    template = TEMPLATES[name]
    params = _fields(template)
    values = dict(zip(params, args, strict=True))
    parts = ["L" if name in LEDGER else "P"]
    for literal, field, _, _ in string.Formatter().parse(template):
        if literal:
            parts.append(repr(literal))
        if field:
            parts.append(f"({lua_inline_keys(values[field])})")
    return "(" + " .. ".join(parts) + ")"


def _call_args(code: str, start: int) -> tuple[list[str], int]:
    """The top-level arguments of the call whose ``(`` is just before ``start``, and the index after
    its ``)``; strings are stepped over whole."""
    args: list[str] = []
    depth, begin, i = 0, start, start
    while True:
        if i >= len(code):
            raise ValueError(f"a key helper's call is not closed on its line: {code.strip()}")
        c = code[i]
        if c in "'\"":
            i += 1
            while code[i] != c:
                i += 2 if code[i] == "\\" else 1
        elif c in "({[":
            depth += 1
        elif c in ")}]":
            if depth == 0:
                args.append(code[begin:i].strip())
                return [a for a in args if a], i + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append(code[begin:i].strip())
            begin = i + 1
        i += 1


def lua_inline_keys(code: str) -> str:
    """Lua code with every call of a parametrized key's helper (``K.job(id)``) written out as the
    concatenation it returns (``(P .. 'job:' .. (id))``), outside comments.  A script runs its whole
    text at each call, so each helper the prelude defines is a closure made again every time: written
    in place, the keys cost no closure and no call."""
    out: list[str] = []
    for line in code.split("\n"):
        if "K." not in line:  # most lines: no call to write out
            out.append(line)
            continue
        comment = _comment_start(line)
        body, rest = line[:comment], line[comment:]
        pos, pieces = 0, []
        for match in _KEY_CALL.finditer(body):
            if match.start() < pos or not _fields(TEMPLATES.get(match.group(1), "")):
                continue
            args, end = _call_args(body, match.end())
            pieces += [body[pos : match.start()], _template_expr(match.group(1), args)]
            pos = end
        out.append("".join(pieces) + body[pos:] + rest)
    return "\n".join(out)


def _comment_start(line: str) -> int:
    """Where a Lua line's ``--`` comment begins (len(line) when it has none), strings stepped over."""
    if "--" not in line:
        return len(line)
    i, quote = 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif line.startswith("--", i):
            return i
        i += 1
    return len(line)
