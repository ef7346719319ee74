"""What the fault suite checks once the work has settled, from what the run left behind: the stream
(the ledger itself), the producers' records of their creates, the workers' records of their runs,
their logs, and the harness's records of its faults (kills, outages, answers the proxy dropped).
:func:`figures` reduces it all to one :class:`Figures`.

Every job run more than once is explained, or not, by :func:`explain`: each run after a job's first
is put down to something recorded about the attempt of the run before it (its window is read from
the job's events in the ledger) -- its worker's PID killed after that run began and before the
attempt ended; an outage longer than the job's timeout (the shorter of ``timeout`` and
``heartbeat_timeout`` its ``job_created`` event records) overlapping the attempt; or an answer the
proxy dropped during the attempt to a command naming the job.  A rerun none of these explains is
listed with its job, attempts, times, events and the faults around it."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis

from jobledger.ledger.keys import Keys
from jobledger.replay.placement import misplaced
from tests.ledger.test_transitions import ALLOWED
from tests.support.ledger import STATUS_OF

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
class Outage:
    """A time the ledger could not be reached: Valkey paused (SIGSTOP to SIGCONT) or killed (SIGKILL
    until it answered again), or the server killed (SIGKILL until it answered its health check)."""

    start: float  # wall time, seconds
    end: float
    what: str

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Drop:
    """An answer the proxy lost: the scripted command it answered, passed on at ``sent``, took effect;
    the connection was closed at ``at`` instead of passing the answer back."""

    at: float  # wall time, seconds
    sent: float
    args: tuple[str, ...]  # the command's arguments (EVALSHA, the script's sha, numkeys, ...), cut short


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


# --- why a job ran again ---------------------------------------------------------------------------

KILLED, OUTAGE, DROPPED = "worker killed", "outage longer than the timeout", "answer dropped"
#: Events after which a job is no longer running the attempt it started.
ATTEMPT_ENDS = {"job_completed", "job_failed", "job_timed_out", "job_cancelled", "job_returned",
                "job_requeued", "job_expired", "job_deleted"}  # fmt: skip
#: Seconds either side of an unexplained rerun's attempt in which faults are listed with it.
AROUND = 10.0


def appended(entry: Entry) -> float:
    """When ``entry`` was appended, in wall-time seconds: its stream id is the server's clock."""
    return int(entry.id.split("-")[0]) / 1000


@dataclass(frozen=True)
class Attempt:
    number: int
    worker: str  # the worker id its job_started records
    started: float  # wall time, seconds, from the stream id of its job_started
    ended: float | None = None  # ... of the event that ended it; None: never ended
    end: str = ""  # that event's type


def attempts(history: list[Entry]) -> dict[int, Attempt]:
    """A job's attempts, by number, each from its ``job_started`` to the event that ended it."""
    out: dict[int, Attempt] = {}
    current: Attempt | None = None
    for entry in history:
        if current is not None and (entry.type in ATTEMPT_ENDS or entry.type == "job_started"):
            out[current.number] = replace(current, ended=appended(entry), end=entry.type)
            current = None
        if entry.type == "job_started":
            number = int(entry.data.get("attempt", len(out) + 1))
            current = Attempt(number, str(entry.data.get("worker", "")), appended(entry))
    if current is not None:
        out[current.number] = current
    return out


def timeout_of(history: list[Entry]) -> float | None:
    """The job's timeout in seconds: the shorter of ``timeout`` and ``heartbeat_timeout`` its
    ``job_created`` event records (absent or 0: none); None when it has neither."""
    created = next((e for e in history if e.type == "job_created"), None)
    if created is None:
        return None
    given = [int(created.data.get(k) or 0) for k in ("timeout", "heartbeat_timeout")]
    given = [ms for ms in given if ms > 0]
    return min(given) / 1000 if given else None


@dataclass(frozen=True)
class Faults:
    """What the harness recorded doing."""

    kills: list[Kill] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)

    def why(self, job: int, before: Run, attempt: Attempt, end: float, timeout: float | None) -> str:
        """The recorded fault that made ``attempt`` (of the run ``before``, ended at ``end``) end
        without its outcome, as ``"CAUSE: fact"``; "" when none did."""
        start = attempt.started
        for k in self.kills:
            if k.what.startswith("worker") and k.pid == before.pid and before.at <= k.at <= end:
                return f"{KILLED}: {k.what} (pid {k.pid}) killed at {k.at:.3f}"
        for o in self.outages:
            if timeout is not None and o.seconds > timeout and o.start < end and o.end > start:
                return f"{OUTAGE}: {o.what} {o.start:.3f}-{o.end:.3f} ({o.seconds:.1f} s)"
        for d in self.drops:
            if start <= d.at <= end and str(job) in d.args[3:]:
                return f"{DROPPED}: answer to {' '.join(d.args[:5])} dropped at {d.at:.3f}"
        return ""

    def around(self, start: float, end: float) -> list[str]:
        """Every fault recorded from ``AROUND`` seconds before ``start`` to as long after ``end``."""
        lo, hi = start - AROUND, end + AROUND
        near = [f"{k.what} pid {k.pid} killed at {k.at:.3f}" for k in self.kills if lo <= k.at <= hi]
        near += [
            f"{o.what} {o.start:.3f}-{o.end:.3f} ({o.seconds:.1f} s)"
            for o in self.outages
            if o.start <= hi and o.end >= lo
        ]
        near += [
            f"answer dropped at {d.at:.3f} ({' '.join(d.args[:5])})" for d in self.drops if lo <= d.at <= hi
        ]
        return near


@dataclass(frozen=True)
class Rerun:
    job: int
    before: Run  # the run before
    run: Run  # the run again
    why: str  # "CAUSE: the fact", CAUSE one of KILLED, OUTAGE, DROPPED; "" unexplained
    detail: str = ""  # when unexplained: what the ledger says of the attempt, and the faults around it
    history: tuple[Entry, ...] = ()

    @property
    def cause(self) -> str:
        return self.why.split(":", 1)[0]

    def describe(self) -> str:
        events = ", ".join(f"{e.type}@{e.id}" for e in self.history)
        return (
            f"job {self.job} ran again unexplained: attempt {self.before.attempt} by pid {self.before.pid} "
            f"at {self.before.at:.3f}, then attempt {self.run.attempt} by pid {self.run.pid} at "
            f"{self.run.at:.3f}; {self.detail}; events: {events}"
        )


def explain(jobs: dict[int, list[Entry]], runs: list[Run], faults: Faults) -> list[Rerun]:
    """Each run after a job's first, with why it happened, from the recorded facts alone."""
    per_job: dict[int, list[Run]] = defaultdict(list)
    for run in runs:
        per_job[run.job].append(run)
    out = []
    for job, job_runs in sorted(per_job.items()):
        history = jobs.get(job, [])
        tries, timeout = attempts(history), timeout_of(history)
        for before, run in itertools.pairwise(sorted(job_runs, key=lambda r: r.at)):
            attempt = tries.get(before.attempt)
            if attempt is None:
                out.append(
                    Rerun(job, before, run, "", f"the ledger has no attempt {before.attempt}", tuple(history))
                )
                continue
            if run.attempt <= before.attempt:
                out.append(
                    Rerun(job, before, run, "", f"attempt {before.attempt} handed out twice", tuple(history))
                )
                continue
            # the attempt ran from its start until it ended (never ended: until the run again began)
            end = attempt.ended if attempt.ended is not None else run.at
            why = faults.why(job, before, attempt, end, timeout)
            if why:
                out.append(Rerun(job, before, run, why))
                continue
            ended = (
                f"ended by {attempt.end} at {attempt.ended:.3f}"
                if attempt.ended is not None
                else "never ended"
            )
            near = "; ".join(faults.around(attempt.started, end)) or "none"
            detail = (
                f"attempt {attempt.number} (worker {attempt.worker}) started at {attempt.started:.3f}, "
                f"{ended}, timeout {timeout} s; faults within {AROUND:g} s: {near}"
            )
            out.append(Rerun(job, before, run, "", detail, tuple(history)))
    return out


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
    reruns: int = 0  # runs after a job's first
    by_kill: int = 0  # ... explained by the earlier run's worker killed during its attempt
    by_outage: int = 0  # ... by an outage longer than the job's timeout during that attempt
    by_drop: int = 0  # ... by an answer dropped during that attempt to a command naming the job
    unexplained: int = 0  # ... by none of these
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
        ("reruns", "reruns"),
        ("  explained: worker killed", "by_kill"),
        ("  explained: outage > timeout", "by_outage"),
        ("  explained: answer dropped", "by_drop"),
        ("  unexplained", "unexplained"),
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
    outages: list[Outage],
    drops: list[Drop],
    misplaced: list[str],
    verify: int,
) -> Figures:
    dropped = len(drops)
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

    # runs: every one after a job's first explained by a recorded fault, or listed
    out.run_twice = sum(1 for n in Counter(run.job for run in runs).values() if n > 1)
    for rerun in explain(jobs, runs, Faults(kills, outages, drops)):
        out.reruns += 1
        if rerun.cause == KILLED:
            out.by_kill += 1
        elif rerun.cause == OUTAGE:
            out.by_outage += 1
        elif rerun.cause == DROPPED:
            out.by_drop += 1
        else:
            out.unexplained += 1
            out.problems.append(rerun.describe())
    return out
