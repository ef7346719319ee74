"""Typed readers of the projections, each a :class:`~jobledger.ledger.reads.Read`."""

from __future__ import annotations

from typing import Any, TypeVar

from jobledger.ledger import job_history
from jobledger.ledger.errors import NotFound
from jobledger.ledger.event_lines import RawEntry
from jobledger.ledger.events import Event, decode_entry
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import id_route, queue_route, spread
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import score_pairs
from jobledger.ledger.requests import JOB_STATUSES, QueueSettings
from jobledger.projections.views import JOB_FIELDS, decode_hash, job_view, queue_settings

T = TypeVar("T")

STATS = (
    "total_jobs_created", "total_jobs_completed", "total_jobs_retried",
    "total_jobs_failed", "total_jobs_timed_out", "total_jobs_cancelled",
)  # fmt: skip


def _str(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def queue_names() -> Read[list[str]]:
    return Read(
        lambda k: [("SMEMBERS", k.build("queues"))],
        lambda r: sorted(_str(n) for n in r[0]),
        spread(lambda parts: sorted(n for names in parts for n in names)),
    )


def queue(name: str) -> Read[QueueSettings]:
    """The queue's settings, or NotFound."""

    def parse(r: list[Any]) -> QueueSettings:
        if not r[0]:
            raise NotFound(f"queue '{name}' does not exist")
        return queue_settings(decode_hash(r[0]))

    return Read(lambda k: [("HGETALL", k.queue(name))], parse, queue_route(name))


def queue_size(name: str) -> Read[int]:
    def parse(r: list[Any]) -> int:
        if not r[0]:
            raise NotFound(f"queue '{name}' does not exist")
        return int(r[1]) + int(r[2] or 0)

    return Read(lambda k: [("EXISTS", k.queue(name)), *_queued_count(k, name)], parse, queue_route(name))


def _queued_count(k: Keys, name: str) -> list[tuple[Any, ...]]:
    """Two replies that add up to the queued jobs: plain ones, and those waiting in quota lanes."""
    return [("ZCARD", k.queued_ids(name)), ("GET", k.build("queue_laned", name=name))]


def queue_job_ids(name: str) -> Read[dict[str, list[int]]]:
    """``{status: [ids]}`` for every status; queued ids in the order they will be handed out.

    A deleted queue still answers with the jobs it left behind (running, failed, ended...: they
    stay in its status sets until they expire or are deleted); NotFound only when the queue does
    not exist and none of its jobs is left, which is all the projections can tell of a queue
    that never existed."""

    def commands(k: Keys) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = [
            ("EXISTS", k.queue(name)),
            ("SMEMBERS", k.build("queue_lanes", name=name)),
            ("ZRANGE", k.queued_ids(name), 0, -1, "WITHSCORES"),
        ]
        return out + [("ZRANGE", k.queue_status(name, s), 0, -1) for s in JOB_STATUSES[1:]]

    def parse(r: list[Any]) -> Read[dict[str, list[int]]]:
        others: dict[str, list[int]] = {
            status: [int(i) for i in ids] for status, ids in zip(JOB_STATUSES[1:], r[3:], strict=True)
        }
        if not r[0] and not any(others.values()):
            raise NotFound(f"queue '{name}' does not exist, and no job of it is left")
        return _queued_in_order(name, [_str(key) for key in r[1]], r[2], others)

    return Read(commands, parse, queue_route(name))


def _queued_in_order(
    name: str, lanes: list[str], plain: list[Any], others: dict[str, list[int]]
) -> Read[dict[str, list[int]]]:
    """Merge the plain queued jobs and every quota lane by score: the order they are handed out in
    (a lane held back by its quota keeps its place in this order)."""

    def parse(r: list[Any]) -> dict[str, list[int]]:
        scored = [(score, int(i)) for i, score in score_pairs(plain)]
        scored += [(score, int(i)) for lane in r for i, score in score_pairs(lane)]
        return {"queued": [i for _, i in sorted(scored)], **others}

    return Read(lambda k: [("ZRANGE", k.build("queue_lane", name=name, key=key), 0, -1, "WITHSCORES")
                           for key in lanes], parse)  # fmt: skip


def job(job_id: int, fields: tuple[str, ...] = JOB_FIELDS) -> Read[dict[str, Any]]:
    """The job's fields (all, or those named), or NotFound."""

    def parse(r: list[Any]) -> dict[str, Any]:
        if not r[0]:
            raise NotFound(f"job {job_id} does not exist")
        return job_view(job_id, decode_hash(r[0]), fields)

    return Read(lambda k: [("HGETALL", k.job(job_id))], parse, id_route(job_id))


def job_status(job_id: int) -> Read[str]:
    """The job's status (Ocypod's ``GET /job/{id}/status``), or NotFound."""

    def parse(r: list[Any]) -> str:
        if r[0] is None:
            raise NotFound(f"job {job_id} does not exist")
        return _str(r[0])

    return Read(lambda k: [("HGET", k.job(job_id), "status")], parse, id_route(job_id))


def job_field_raw(job_id: int, field: str) -> Read[str | None]:
    """One stored field as text (e.g. ``output`` JSON), NotFound if the job does not exist."""

    def parse(r: list[Any]) -> str | None:
        if not r[0]:
            raise NotFound(f"job {job_id} does not exist")
        return None if r[1] is None else _str(r[1])

    return Read(
        lambda k: [("EXISTS", k.job(job_id)), ("HGET", k.job(job_id), field)], parse, id_route(job_id)
    )


def _history_ids(job_id: int, r: list[Any]) -> list[str]:
    ids = job_history.ids(r)
    if not ids:
        raise NotFound(f"job {job_id} does not exist and never did")
    return ids


def _history_command(job_id: int) -> Any:
    return lambda k: job_history.commands(k, job_id)


def history_ids(job_id: int) -> Read[list[str]]:
    """The ids of the job's events, oldest first (its event index); NotFound for an id never used."""
    return Read(_history_command(job_id), lambda r: _history_ids(job_id, r), id_route(job_id))


def _stream_entries(ids: list[str], r: list[Any]) -> dict[str, RawEntry]:
    return {i: entry[0] for i, entry in zip(ids, r, strict=True) if entry}


def _stream_events(ids: list[str], r: list[Any]) -> dict[str, Event]:
    return {i: decode_entry(*entry) for i, entry in _stream_entries(ids, r).items()}


def _by_id(ids: list[str]) -> Any:
    return lambda k: [("XRANGE", k.events, i, i) for i in ids]


def stream_entries(ids: list[str]) -> Read[dict[str, RawEntry]]:
    """The entries of ``ids`` the stream still holds, as stored (their leaves are made of them), by id."""
    return Read(_by_id(ids), lambda r: _stream_entries(ids, r))


def stream_events(ids: list[str]) -> Read[dict[str, Event]]:
    """The events of ``ids`` the stream still holds (retention may have archived the others), by id."""
    return Read(_by_id(ids), lambda r: _stream_events(ids, r))


def history(job_id: int) -> Read[list[dict[str, Any]]]:
    """Every event of the job the stream holds, oldest first, as API event items; NotFound for an id
    never used.  ``GET /job/{id}/history`` adds the archived ones
    (:func:`jobledger.projections.history.job_history`)."""

    def events(r: list[Any]) -> Read[list[dict[str, Any]]]:
        ids = _history_ids(job_id, r)
        return Read(
            stream_events(ids).commands, lambda r: [e.item() for e in _stream_events(ids, r).values()]
        )

    return Read(_history_command(job_id), events, id_route(job_id))


def tagged(tag: str) -> Read[list[int]]:
    return Read(
        lambda k: [("SMEMBERS", k.tag(tag))],
        lambda r: sorted(int(i) for i in r[0]),
        spread(lambda parts: sorted(i for ids in parts for i in ids)),
    )


def _count_commands(k: Keys, names: list[str]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for n in names:
        out += _queued_count(k, n)
        out += [("ZCARD", k.queue_status(n, s)) for s in JOB_STATUSES[1:]]
    return out


def _counts(names: list[str], r: list[Any]) -> dict[str, dict[str, int]]:
    width = len(JOB_STATUSES) + 1
    queues: dict[str, dict[str, int]] = {}
    for i, n in enumerate(names):
        plain, laned, *rest = r[i * width : (i + 1) * width]
        counts = [int(plain) + int(laned or 0), *(int(c) for c in rest)]
        queues[n] = dict(zip(JOB_STATUSES, counts, strict=True))
    return queues


def status_counts(names: list[str]) -> Read[dict[str, dict[str, int]]]:
    """``{queue: {status: count}}`` of the named queues, from the counters (no set is listed)."""
    return Read(lambda k: _count_commands(k, names), lambda r: _counts(names, r), spread(_summed_counts))


def _summed_counts(parts: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """Counts of the same queues from every partition, added up (each queue's are in its own)."""
    total: dict[str, dict[str, int]] = {}
    for counts in parts:
        for name, by_status in counts.items():
            mine = total.setdefault(name, dict.fromkeys(by_status, 0))
            for status, n in by_status.items():
                mine[status] += n
    return total


def info() -> Read[dict[str, Any]]:
    """Per-queue counts by status and the global statistics (Ocypod's ``/info``)."""

    def counts(names: list[str], stats: dict[str, str]) -> Read[dict[str, Any]]:
        def parse(r: list[Any]) -> dict[str, Any]:
            statistics = {s: int(stats.get(s, 0)) for s in STATS}
            return {"queues": _counts(names, r), "statistics": statistics}

        return Read(lambda k: _count_commands(k, names), parse)

    def stats(stored: dict[str, str], last_id: Any, partition: Any) -> dict[str, str]:
        # job ids are handed out one by one from 1 (in partition p of n: p + n, p + 2n, ...), so the
        # last one counts the jobs ever created
        created = int(last_id or 0)
        if partition is not None and last_id is not None:
            n, p = (int(x) for x in _str(partition).split(":"))
            created = (created - p) // n
        return {**stored, "total_jobs_created": str(created)}

    return Read(
        lambda k: [
            ("SMEMBERS", k.build("queues")),
            ("HGETALL", k.build("stats")),
            ("GET", k.build("job_id")),
            ("GET", k.build("partition")),
        ],
        lambda r: counts(sorted(_str(n) for n in r[0]), stats(decode_hash(r[1]), r[2], r[3])),
        spread(_merged_info),
    )


def _merged_info(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """``/info`` of every partition as one: each queue's counts (from its partition), the statistics
    added up."""
    queues: dict[str, dict[str, int]] = {}
    statistics = dict.fromkeys(STATS, 0)
    for part in parts:
        queues.update(part["queues"])
        for name, n in part["statistics"].items():
            statistics[name] += n
    return {"queues": dict(sorted(queues.items())), "statistics": statistics}


def _oldest_merged(parts: list[dict[str, int | None]]) -> dict[str, int | None]:
    """The partitions' answers as one: a queue's jobs are in its own partition, none elsewhere."""
    return {name: min((at for p in parts if (at := p[name]) is not None), default=None) for name in parts[0]}


def oldest_queued(names: list[str]) -> Read[dict[str, int | None]]:
    """``{queue: when its oldest queued job joined it (ms)}``, None for a queue with none queued; from
    each queue's waiting set, so quota lanes and every priority count."""

    def parse(r: list[Any]) -> dict[str, int | None]:
        return {name: int(pairs[0][1]) if (pairs := score_pairs(reply)) else None
                for name, reply in zip(names, r, strict=True)}  # fmt: skip

    return Read(
        lambda k: [("ZRANGE", k.build("queue_waiting", name=n), 0, 0, "WITHSCORES") for n in names],
        parse,
        spread(_oldest_merged),
    )
