"""What the fault suite checks once the work has settled, from what the run left behind: the stream
(the ledger itself), the producers' records of their creates, the workers' records of their runs,
their logs, and the harness's kill log.  :func:`figures` reduces it all to one :class:`Figures`."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from jobledger.ledger.keys import Keys
from jobledger.replay.placement import misplaced
from tests.ledger.test_transitions import ALLOWED
from tests.support import STATUS_OF

#: status -> {event: status after}: the transition table as the transition tests hold it
#: (tests/ledger/test_transitions.py), with what only the ledger itself does (create, fetch, the
#: scheduler's retries and endings, expiry).  None: no job (before its creation, after its expiry).
TABLE: dict[str | None, dict[str, str | None]] = {None: {"job_created": "queued"}}
for _state, _actions in ALLOWED.items():
    TABLE.setdefault(STATUS_OF[_state], {}).update({event: after for after, event in _actions.values()})
TABLE["queued"]["job_started"] = "running"
TABLE["running"]["job_progressed"] = "running"
for _status in ("failed", "timed_out"):
    TABLE[_status]["job_ended"] = _status
for _status in ("completed", "failed", "timed_out", "cancelled"):
    TABLE[_status].update({"job_expired": None, "job_deleted": None})
ENDED = {"completed", "cancelled", None}

NOT_RECORDED = re.compile(r"job (\d+) \(\S+, attempt (\d+)\): not recorded after .* no longer this worker's")
GIVEN_UP = re.compile(r"job (\d+) \(\S+, attempt (\d+)\): not recorded \(")


@dataclass(frozen=True)
class Entry:
    id: str
    type: str
    at: int
    job: int | None
    data: dict[str, Any]


@dataclass(frozen=True)
class Kill:
    at: float  # wall time, seconds
    pid: int
    what: str  # worker<n>, serve or valkey


@dataclass(frozen=True)
class Run:
    job: int
    attempt: int
    pid: int
    at: float


def read_stream(client: redis.Redis, namespace: str) -> list[Entry]:
    key, out, start = Keys(namespace).events, [], "-"
    while True:
        batch: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(key, start, "+", count=5000)  # type: ignore[assignment]
        for entry_id, raw in batch:
            fields = {k.decode(): v.decode() for k, v in raw.items()}
            job = fields.get("job")
            data = json.loads(fields.get("data") or "{}")
            at, job_id = int(fields["at"]), int(job) if job else None
            out.append(Entry(entry_id.decode(), fields["type"], at, job_id, data))
        if len(batch) < 5000:
            return out
        start = "(" + batch[-1][0].decode()


def read_runs(path: Path) -> list[Run]:
    if not path.exists():
        return []
    runs = []
    for line in path.read_text().splitlines():
        job, attempt, pid, at = line.split()
        runs.append(Run(int(job), int(attempt), int(pid), float(at)))
    return runs


def misplaced_keys(client: redis.Redis, namespace: str) -> list[str]:
    return misplaced(client, namespace)


def by_job(entries: list[Entry]) -> dict[int, list[Entry]]:
    jobs: dict[int, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.job is not None:
            jobs[entry.job].append(entry)
    return jobs


def walk(history: list[Entry]) -> tuple[str | None, list[str]]:
    """A job's history through :data:`TABLE`: its last status and the steps the table does not allow."""
    status: str | None = None
    wrong = []
    for entry in history:
        after = TABLE.get(status, {})
        if entry.type not in after:
            wrong.append(f"job {entry.job}: {entry.type} in status {status}")
            continue
        status = after[entry.type]
    return status, wrong


def unended(entries: list[Entry]) -> list[int]:
    """Jobs whose history has not ended (completed or cancelled, or gone)."""
    return [job for job, history in by_job(entries).items() if walk(history)[0] not in ENDED]


@dataclass
class Figures:
    fault: str
    seconds: float
    faults: int
    features: str
    created: int = 0  # job_created events of the producers' jobs
    acknowledged: int = 0  # logical creates answered with an id
    unacknowledged: int = 0  # logical creates never answered (given up by the producer)
    lost: int = 0  # acknowledged, not completed
    duplicated_creates: int = 0  # jobs beyond the first per Idempotency-Key
    steps_back: int = 0  # events whose `at` is earlier than the one before
    largest_step_back_ms: int = 0
    completed_twice: int = 0  # (job, attempt) with more than one job_completed
    resent_refused: int = 0  # a worker's completion refused although that attempt did complete
    given_up: int = 0  # a worker gave up recording an outcome
    run_twice: int = 0  # jobs with more than one run on record
    run_twice_after_kill: int = 0  # ... of which an earlier run's worker was killed
    invalid_histories: int = 0
    misplaced: int = 0  # projection keys out of place (replay.placement)
    verify: int = -1  # exit code of `jobledger replay verify`
    dropped: int = 0  # answers the proxy lost
    problems: list[str] = field(default_factory=list)

    ROWS = (
        ("faults injected", "faults"),
        ("jobs created", "created"),
        ("acknowledged", "acknowledged"),
        ("never acknowledged", "unacknowledged"),
        ("lost", "lost"),
        ("duplicated creates", "duplicated_creates"),
        ("steps back in at", "steps_back"),
        ("largest step back (ms)", "largest_step_back_ms"),
        ("attempts completed twice", "completed_twice"),
        ("completions resent and refused", "resent_refused"),
        ("outcomes given up by a worker", "given_up"),
        ("jobs run twice", "run_twice"),
        ("  of which after a worker kill", "run_twice_after_kill"),
        ("histories off the table", "invalid_histories"),
        ("projection keys misplaced", "misplaced"),
        ("answers dropped by the proxy", "dropped"),
        ("replay verify exit code", "verify"),
    )


def table(figures: list[Figures]) -> str:
    """The figures of several runs side by side, one column per fault kind."""
    width = max(len(label) for label, _ in Figures.ROWS)
    cols = [max(len(f.fault), 6) for f in figures]
    head = " " * width + " | " + " | ".join(f.fault.rjust(c) for f, c in zip(figures, cols, strict=True))
    lines = [head, "-" * len(head)]
    for label, name in Figures.ROWS:
        values = [str(getattr(f, name)).rjust(c) for f, c in zip(figures, cols, strict=True)]
        lines.append(label.ljust(width) + " | " + " | ".join(values))
    return "\n".join(lines)


def figures(
    *,
    fault: str,
    seconds: float,
    faults: int,
    features: str,
    entries: list[Entry],
    creates: list[dict[str, Any]],
    runs: list[Run],
    kills: list[Kill],
    worker_logs: str,
    misplaced: list[str],
    verify: int,
    dropped: int,
) -> Figures:
    out = Figures(fault, seconds, faults, features, verify=verify, dropped=dropped, misplaced=len(misplaced))
    out.problems += misplaced[:20]
    jobs = by_job(entries)

    # creates: per key, the jobs the ledger holds; acknowledged ones must have completed
    keys: Counter[str] = Counter()
    for entry in entries:
        if entry.type == "job_created":
            given = json.loads(entry.data["input"]) if entry.data.get("input") else None
            if isinstance(given, dict) and "key" in given and not given.get("probe"):
                keys[given["key"]] += 1
    out.created = sum(keys.values())
    out.duplicated_creates = sum(n - 1 for n in keys.values() if n > 1)
    statuses = {job: walk(history)[0] for job, history in jobs.items()}
    for create in creates:
        if create["id"] is None:
            out.unacknowledged += 1
            continue
        out.acknowledged += 1
        completed = any(e.type == "job_completed" for e in jobs.get(create["id"], []))
        if not completed:
            out.lost += 1
            status = statuses.get(create["id"])
            out.problems.append(f"acknowledged job {create['id']} not completed: {status}")

    # time along the stream
    for before, after in itertools.pairwise(entries):
        if after.at < before.at:
            out.steps_back += 1
            out.largest_step_back_ms = max(out.largest_step_back_ms, before.at - after.at)

    # histories and attempts
    done: set[tuple[int, int]] = set()
    for job, history in jobs.items():
        wrong = walk(history)[1]
        if wrong:
            out.invalid_histories += 1
            out.problems += wrong[:3]
        attempt, completions = 0, Counter[int]()
        for entry in history:
            if entry.type == "job_started":
                attempt += 1
            elif entry.type == "job_completed":
                completions[attempt] += 1
                done.add((job, attempt))
        out.completed_twice += sum(1 for n in completions.values() if n > 1)

    # what the workers said
    for match in NOT_RECORDED.finditer(worker_logs):
        if (int(match[1]), int(match[2])) in done:
            out.resent_refused += 1
    out.given_up = len(GIVEN_UP.findall(worker_logs))

    # runs: twice only where a worker holding the job was killed
    killed = [k for k in kills if k.what.startswith("worker")]
    per_job: dict[int, list[Run]] = defaultdict(list)
    for run in runs:
        per_job[run.job].append(run)
    for job, job_runs in per_job.items():
        if len(job_runs) < 2:
            continue
        out.run_twice += 1
        earlier = sorted(job_runs, key=lambda r: r.at)[:-1]
        if any(k.pid == r.pid and k.at >= r.at for r in earlier for k in killed):
            out.run_twice_after_kill += 1
        else:
            out.problems.append(f"job {job} ran {len(job_runs)} times with no worker killed: {job_runs}")
    return out
