"""Verify invariant 6 ("nothing is lost") over a whole namespace.

Every live job must be in exactly the one place its status implies (its queue's ``jobs`` set when
queued, and its queue's waiting set, else the queue's set for its status), in exactly the deadline set
its status schedules it in,
with the score that schedule implies, and in the tag set of each of its tags; and every member of a
place, deadline or tag set must be a live job that belongs there.  Launchers likewise: each is in
the launcher indexes, in ``due:launch`` exactly when it has a ``next_at`` (with that score), and its
pending set holds exactly its live jobs that have not ended.  A verification tool: it reads the
whole namespace with SCAN, so it costs time in proportion to the size of the namespace.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import redis

from jobledger.ledger.keys import TEMPLATES
from jobledger.ledger.requests import JOB_STATUSES
from jobledger.ledger.runner import live_keys

_LAUNCHER_KINDS = {(2, ""): "launcher", (3, "pending"): "pending"}
_LAUNCHER_SETS = (TEMPLATES["launchers"], TEMPLATES["event_launchers"])
DEADLINES = {
    TEMPLATES[name]: name for name in ("due_run", "due_retry", "due_expire", "due_release", "due_queued")
}
QUOTA_INDEXES = ("lanes", "laned", "heads", "keys")
#: Per-queue keys that hold no job: counts of what ended, lifetime totals (replay equality checks them).
QUEUE_COUNTERS = ("throughput", "totals")
#: The per-queue set of queued jobs by when they joined the queue.
WAITING = "waiting"
PRIORITY_UNIT = 2**40  # enter_queue's score: (100 - priority) * 2^40 + sequence number

#: (key without the namespace prefix, score or None when any score is right)
Entry = tuple[str, float | None]


@dataclass
class Layout:
    """What the namespace holds: job hashes, and the members of every place, deadline and tag set."""

    jobs: dict[str, dict[str, str]] = field(default_factory=dict)
    zsets: dict[str, dict[str, float]] = field(default_factory=dict)  # places and deadlines
    tags: dict[str, set[str]] = field(default_factory=dict)
    unique: dict[str, dict[str, str]] = field(default_factory=dict)  # queue -> unique_key -> id
    launchers: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> launcher hash
    pending: dict[str, set[str]] = field(default_factory=dict)  # launcher id -> pending job ids
    launcher_sets: dict[str, set[str]] = field(default_factory=dict)  # launchers, launchers:event
    due_launch: dict[str, float] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _kind(rel: str) -> str | None:
    """Which part of the layout a key (prefix removed) belongs to; None for keys not checked here."""
    parts = rel.split(":")
    if parts[0] == "launcher":
        return _LAUNCHER_KINDS.get((len(parts), parts[-1] if len(parts) == 3 else ""), "unknown")
    if rel in _LAUNCHER_SETS:
        return "launcher_set"
    if rel == TEMPLATES["due_launch"]:
        return "due_launch"
    if parts[0] == "job" and len(parts) == 2:
        return "job"
    if parts[0] == "tag":
        return "tag"
    if parts[0] == "queue" and len(parts) >= 4 and parts[2] == "lane":
        return "zset"
    if parts[0] == "queue" and len(parts) == 3:
        if parts[2] == "unique":
            return "unique"
        if parts[2] in QUOTA_INDEXES or parts[2] in QUEUE_COUNTERS:
            return None  # derived from the lanes, running jobs or ended runs; checked by replay equality
        return "zset" if parts[2] in JOB_STATUSES or parts[2] == WAITING else "unknown"
    return "zset" if rel in DEADLINES else None


def read_layout(client: redis.Redis, namespace: str) -> Layout:
    """Read every job hash and every place, deadline and tag set of the namespace."""
    keys = live_keys(client, namespace)
    prefix = keys.prefix
    layout = Layout()
    rels = [_s(k)[len(prefix) :] for k in client.scan_iter(match=keys.pattern(), count=1000)]
    rels = [rel for rel in rels if keys.owns(rel)]
    kinds = [(rel, _kind(rel)) for rel in sorted(set(rels))]
    pipe = client.pipeline(transaction=False)
    for rel, kind in kinds:
        if kind in ("job", "unique", "launcher"):
            pipe.hgetall(prefix + rel)
        elif kind in ("pending", "launcher_set"):
            pipe.smembers(prefix + rel)
        elif kind in ("zset", "due_launch"):
            pipe.zrange(prefix + rel, 0, -1, withscores=True)
        elif kind == "tag":
            pipe.smembers(prefix + rel)
    replies = iter(pipe.execute())
    for rel, kind in kinds:
        if kind == "job":
            layout.jobs[rel[4:]] = {_s(k): _s(v) for k, v in next(replies).items()}
        elif kind == "zset":
            layout.zsets[rel] = {_s(m): float(score) for m, score in next(replies)}
        elif kind == "tag":
            layout.tags[rel[4:]] = {_s(m) for m in next(replies)}
        elif kind == "unique":
            layout.unique[rel.split(":")[1]] = {_s(k): _s(v) for k, v in next(replies).items()}
        elif kind == "unknown":
            layout.unknown.append(rel)
        elif kind is not None:
            _read_launcher_key(layout, rel, kind, next(replies))
    return layout


def _read_launcher_key(layout: Layout, rel: str, kind: str, reply: Any) -> None:
    if kind == "launcher":
        layout.launchers[rel.split(":")[1]] = {_s(k): _s(v) for k, v in reply.items()}
    elif kind == "pending":
        layout.pending[rel.split(":")[1]] = {_s(m) for m in reply}
    elif kind == "launcher_set":
        layout.launcher_sets[rel] = {_s(m) for m in reply}
    else:
        layout.due_launch = {_s(m): float(score) for m, score in reply}


def place(job: dict[str, str]) -> str:
    """The one place (key without prefix) the job's status implies."""
    queue, status = job["queue"], job["status"]
    if status == "queued" and "quota_key" in job:
        return TEMPLATES["queue_lane"].format(name=queue, key=job["quota_key"])
    if status == "queued":
        return TEMPLATES["queued_ids"].format(name=queue)
    return TEMPLATES["queue_status"].format(name=queue, status=status)


def run_deadline(job: dict[str, str]) -> int | None:
    """When a running job times out: the earlier of its enabled timeout and heartbeat deadlines."""
    started = int(job["started_at"])
    timeout, beat = int(job.get("timeout", 0)), int(job.get("heartbeat_timeout", 0))
    deadlines = []
    if timeout > 0:
        deadlines.append(started + timeout)
    if beat > 0:
        deadlines.append(int(job.get("last_heartbeat", started)) + beat)
    return min(deadlines) if deadlines else None


def deadline(job: dict[str, str]) -> Entry | None:
    """The deadline set the job's status schedules it in, with its score (None: not checked)."""
    status, ended = job["status"], job.get("ended") == "1"
    if status == "running":
        at = run_deadline(job)
        return None if at is None else (TEMPLATES["due_run"], float(at))
    if ended:
        expires_after = int(job.get("expires_after", 0))
        if expires_after <= 0:
            return None
        return TEMPLATES["due_expire"], float(int(job["ended_at"]) + expires_after)
    if status in ("failed", "timed_out"):
        return TEMPLATES["due_retry"], float(job["retry_at"]) if "retry_at" in job else None
    if status == "scheduled":
        return TEMPLATES["due_release"], float(job["run_at"])
    if status == "queued" and "max_queued_time" in job:
        return TEMPLATES["due_queued"], None  # counted from when it entered the queue
    return None


def _job_problems(job_id: str, job: dict[str, str]) -> list[str]:
    """Fields without which the job has no defined place."""
    problems = [f"job {job_id} has no {name}" for name in ("queue", "status") if name not in job]
    if job.get("status", "queued") not in JOB_STATUSES:
        problems.append(f"job {job_id} has unknown status {job['status']!r}")
    if job.get("status") == "running" and "started_at" not in job:
        problems.append(f"job {job_id} is running but has no started_at")
    ended = job.get("ended") == "1"
    if ended and "ended_at" not in job:
        problems.append(f"job {job_id} has ended but has no ended_at")
    if ended and job.get("status") in ("queued", "running"):
        problems.append(f"job {job_id} is {job['status']} but marked ended")
    if job.get("status") in ("queued", "running", "scheduled") and "ended_at" in job:
        problems.append(f"job {job_id} is {job['status']} but keeps the ended_at of an earlier run")
    return problems


def _score_problems(job_id: str, job: dict[str, str], rel: str, score: float) -> list[str]:
    """Scores a place or deadline must have whatever the schedule: id, priority band, retry >= end."""
    if rel.startswith("queue:") and (rel.endswith(":queued") or rel.split(":")[2] == "lane"):
        band = 100 - int(job.get("priority", 0))
        if not band * PRIORITY_UNIT < score < (band + 1) * PRIORITY_UNIT:
            return [f"job {job_id} has score {score} in {rel}, outside priority band {band}"]
    elif rel.startswith("queue:") and rel.split(":")[2] == WAITING:
        return []  # scored by when the job joined its queue, which _expected checks
    elif rel.startswith("queue:") and score != float(job_id):
        return [f"job {job_id} has score {score} in {rel}; expected its id"]
    elif rel == TEMPLATES["due_retry"] and score < int(job.get("ended_at", 0)):
        return [f"job {job_id} is due to retry at {score}, before it stopped ({job.get('ended_at')})"]
    return []


def _expected(job: dict[str, str]) -> dict[str, float | None]:
    expected: dict[str, float | None] = {place(job): None}
    if job["status"] == "queued":
        joined = job.get("queued_at", job.get("created_at", "0"))
        expected[TEMPLATES["queue_waiting"].format(name=job["queue"])] = float(joined)
    due = deadline(job)
    if due is not None:
        expected[due[0]] = due[1]
    return expected


def _placement_problems(job_id: str, job: dict[str, str], found: dict[str, float]) -> list[str]:
    """The job's memberships of places and deadline sets against those its status implies."""
    expected = _expected(job)
    state = job["status"] + (" (ended)" if job.get("ended") == "1" else "")
    if set(found) != set(expected):
        return [f"job {job_id} ({state}) is in {sorted(found)}; expected {sorted(expected)}"]
    problems = []
    for rel, score in found.items():
        if expected[rel] is not None and score != expected[rel]:
            problems.append(f"job {job_id} has score {score} in {rel}; expected {expected[rel]}")
        problems += _score_problems(job_id, job, rel, score)
    return problems


def _tag_problems(job_id: str, job: dict[str, str], found: set[str]) -> list[str]:
    expected = set(json.loads(job["tags"])) if job.get("tags") else set()
    if found != expected:
        return [f"job {job_id} is in the sets of tags {sorted(found)}; expected {sorted(expected)}"]
    return []


def _memberships(layout: Layout) -> tuple[dict[str, dict[str, float]], dict[str, set[str]]]:
    """member -> {place or deadline key: score}, and member -> {tags}."""
    zsets: dict[str, dict[str, float]] = defaultdict(dict)
    for rel, scores in layout.zsets.items():
        for member, score in scores.items():
            zsets[member][rel] = score
    tags: dict[str, set[str]] = defaultdict(set)
    for tag, members in layout.tags.items():
        for member in members:
            tags[member].add(tag)
    return zsets, tags


def _orphans(layout: Layout) -> list[str]:
    """Members of place, deadline or tag sets that are not live jobs."""
    problems = []
    for rel, scores in layout.zsets.items():
        problems += [f"{rel} holds {m}, which is not a live job" for m in scores if m not in layout.jobs]
    for tag, members in layout.tags.items():
        problems += [f"tag:{tag} holds {m}, which is not a live job" for m in members if m not in layout.jobs]
    return problems


def _unique_problems(layout: Layout) -> list[str]:
    """Each unique_key in a queue's index is held by a live, not-ended job of that queue with that key."""
    problems = []
    for queue, held in layout.unique.items():
        for key, job_id in held.items():
            job = layout.jobs.get(job_id)
            if job is None or job.get("unique_key") != key or job.get("queue") != queue:
                problems.append(
                    f"unique_key {key!r} of queue {queue!r} names job {job_id}, which does not hold it"
                )
            elif job.get("ended") == "1":
                problems.append(f"unique_key {key!r} of queue {queue!r} is held by ended job {job_id}")
    return problems


def misplaced(client: redis.Redis, namespace: str) -> list[str]:
    """Every violation of invariant 6 in the namespace, as readable lines; empty when all is well."""
    layout = read_layout(client, namespace)
    zsets, tags = _memberships(layout)
    problems = [f"unexpected key {rel}" for rel in layout.unknown]
    for job_id in sorted(layout.jobs, key=int):
        job = layout.jobs[job_id]
        fields = _job_problems(job_id, job)
        if fields:
            problems += fields
            continue
        problems += _placement_problems(job_id, job, zsets.get(job_id, {}))
        problems += _tag_problems(job_id, job, tags.get(job_id, set()))
    return problems + _orphans(layout) + _unique_problems(layout) + launcher_problems(layout)


def launcher_problems(layout: Layout) -> list[str]:
    """The launcher indexes, ``due:launch`` and the pending sets against the launcher hashes."""
    ids = set(layout.launchers)
    events = {i for i, h in layout.launchers.items() if h.get("type") == "@event"}
    problems = [
        f"{rel} holds {sorted(found)}; expected {sorted(expected)}"
        for rel, expected in ((TEMPLATES["launchers"], ids), (TEMPLATES["event_launchers"], events))
        if (found := layout.launcher_sets.get(rel, set())) != expected
    ]
    expected_due = {i: float(h["next_at"]) for i, h in layout.launchers.items() if "next_at" in h}
    if layout.due_launch != expected_due:
        problems.append(f"{TEMPLATES['due_launch']} holds {layout.due_launch}; expected {expected_due}")
    pending: dict[str, set[str]] = defaultdict(set)
    for job_id, job in layout.jobs.items():
        if job.get("launcher") in ids and job.get("ended") != "1":
            pending[job["launcher"]].add(job_id)
    for launcher_id in sorted(ids | set(layout.pending), key=lambda i: (len(i), i)):
        found, expected = layout.pending.get(launcher_id, set()), pending.get(launcher_id, set())
        if launcher_id not in ids:
            problems.append(f"launcher {launcher_id} does not exist but has pending jobs {sorted(found)}")
        elif found != expected:
            problems.append(
                f"launcher {launcher_id} has pending jobs {sorted(found)}; expected {sorted(expected)}"
            )
    return problems
