"""Replay equality (invariant 4) and placement (invariant 6) under random command sequences.

A hypothesis state machine drives one ledger through every command over three queues with random
settings, a few tags, workers, stale and current attempts, and a frozen clock that it moves on
before running the scheduler.  The extensions take part: priorities, run_at / delay, unique and
quota keys from small sets, max_queued_time, retry_on / no_retry_on and failures with error kinds
from one small set, retry_backoff, progress and message, pause and resume.  Refused commands
(NotFound, Conflict) are part of the game; they must append nothing.  After every step each live
job is exactly where its status puts it; after the last step, rebuilding the projections from the
stream alone gives exactly the live ones (a rebuild costs tens of milliseconds, too much for every
step of every example, and far too much while shrinking).  A stopping worker's hand-back of a
running job (``job_returned``) is a rule of its own, and the moves' requeue naming the current
attempt of a running job is one too.  Creates with an Idempotency-Key from a small set (one job or
a batch, the same request again or another one) and the scheduler forgetting keys as the clock moves
past their windows take part too, and the commands run as one actor or another (a key is its
sender's).  Jobs name files (a few blobs from one small set, so queues share them) and their running
attempts add results, some replacing one of the same name: the blob counts, in all and by queue.
Bulk operations (requeue, cancel, delete by a drawn filter, in batches, some cut short before their
end, some dry) take part, and their records are projections like any other.
Each queue's lifetime totals agree with the stream's events of that queue, and its wait histogram
counts every start.  Named launchers take part: declared again with the same or another declaration
(timed ones with max_pending or a unique key, so they are held back and released; a cron one in a
time zone; an @event one), paused, resumed, fired by hand and deleted, and fired by the ticks.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
import uuid
from datetime import UTC
from pathlib import Path
from typing import Any, ClassVar

import hypothesis.strategies as st
import pytest
import redis
from freezegun import freeze_time
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from jobledger.ledger import commands
from jobledger.ledger.bulk import BulkRequest, bulk_finish, bulk_jobs, bulk_start
from jobledger.ledger.commands import Call, Created, Fetched, Idempotency
from jobledger.ledger.durations import format_time
from jobledger.ledger.errors import Conflict, Mismatch, NotFound
from jobledger.ledger.files import FileRef
from jobledger.ledger.keys import Keys
from jobledger.ledger.launcher_declarations import put as put_launcher
from jobledger.ledger.launcher_declarations import resume as resume_launcher
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.requests import Backoff, JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, revoke_token
from jobledger.projections import launchers as launcher_readers
from jobledger.projections import readers
from jobledger.projections.queue_totals import queue_totals
from jobledger.projections.views import decode_hash
from jobledger.replay.compare import compare
from jobledger.replay.placement import misplaced
from jobledger.replay.rebuild import rebuild
from jobledger.replay.source import read_ledger
from jobledger.scheduler.loop import tick
from tests.support.ledger import START, stream_length
from tests.support.replay import archive, local_archive

QUEUES = ("alpha", "beta", "gamma")
TAGS = ("red", "green", "blue")
DURATIONS = ("0s", "1s", "5s", "30s", "2m", "1h")
#: error kinds: a worker's own, and the three timeouts, so retry_on / no_retry_on can name any of them
KINDS = ("io", "fatal", "timeout", "heartbeat_timeout", "queued_timeout")
UNIQUE_KEYS = ("u1", "u2")
IDEMPOTENCY_KEYS = ("i1", "i2", "i3")
#: an Idempotency-Key's window, in ms: around the clock's steps
WINDOWS = (1000, 60_000, 3_600_000)
QUOTA_KEYS = ("k1", "k2")
#: run_at relative to the frozen clock, in ms: past, now, soon, later
RUN_AT = (-1000, 0, 1, 1000, 30_000, 3_600_000)
#: the blobs jobs name (the ledger holds references only: no store takes part)
BLOBS = tuple(hashlib.sha256(name.encode()).hexdigest() for name in ("one", "two", "three"))

#: event type -> the outcome it counts in its queue's totals
OUTCOME_OF = {f"job_{o}": o for o in ("created", "started", "completed", "failed", "timed_out",
              "cancelled", "expired", "returned")}  # fmt: skip

durations = st.sampled_from(DURATIONS)
delays = st.lists(st.sampled_from(("0s", "1s", "10s", "1m")), max_size=3)
#: retry_on / no_retry_on: most often none, so that failures with retries left do retry
kinds: st.SearchStrategy[list[str]] = st.one_of(
    st.just([]), st.just([]), st.lists(st.sampled_from(KINDS), min_size=1, max_size=2, unique=True)
)
backoffs = st.builds(
    Backoff,
    base=st.sampled_from(("0s", "1s", "10s")),
    factor=st.sampled_from((1, 1.5, 2)),
    max=st.sampled_from(("5s", "1m")),
)
priorities = st.sampled_from((0, 1, 50, 100))
queued_times = st.sampled_from(("0s", "1s", "30s"))
queue_settings = st.builds(
    QueueSettings,
    timeout=durations,
    heartbeat_timeout=durations,
    expires_after=durations,
    retries=st.integers(0, 3),
    retry_delays=delays,
    retry_backoff=st.one_of(st.none(), backoffs),
    priority=priorities,
    max_queued_time=queued_times,
    retry_on=kinds,
    no_retry_on=kinds,
    paused=st.sampled_from((False, False, False, False, False, True)),
)


def file_specs(shas: list[str]) -> list[dict[str, Any]]:
    """A job's files naming these blobs (resolved, as the server sends them to the ledger)."""
    return [{"name": f"f{i}", "sha256": h, "size": 3, "media_type": "text/plain"} for i, h in enumerate(shas)]


#: a job's options as JobOptions keywords; "start" is ("run_at", ms from now) or ("delay", duration)
job_options = st.fixed_dictionaries(
    {},
    optional={
        "input": st.one_of(
            st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)
        ),
        "tags": st.lists(st.sampled_from(TAGS), max_size=3),
        "timeout": durations,
        "heartbeat_timeout": durations,
        "expires_after": durations,
        "retries": st.integers(0, 2),
        "retry_delays": delays,
        "retry_backoff": backoffs,
        "priority": priorities,
        "unique_key": st.sampled_from(UNIQUE_KEYS),
        "quota_key": st.sampled_from(QUOTA_KEYS),
        "max_queued_time": queued_times,
        "retry_on": kinds,
        "no_retry_on": kinds,
        "files": st.lists(st.sampled_from(BLOBS), min_size=1, max_size=2).map(file_specs),
        "start": st.one_of(
            st.tuples(st.just("run_at"), st.sampled_from(RUN_AT)), st.tuples(st.just("delay"), durations)
        ),
    },
)
queues = st.sampled_from(QUEUES)
fetch_from = st.sampled_from(("busiest", *QUEUES))  # "busiest": the most queued jobs
attempts = st.sampled_from(("current", "none", "stale"))
#: which job a rule acts on: (running / live / gone, an index into those)
jobs = st.tuples(st.sampled_from(("running", "live", "gone")), st.integers(0, 1000))
outputs = st.one_of(st.none(), st.integers(), st.text(max_size=5))
NO_OUTPUT = "<no output>"
#: Hypothesis draws the first of a sampled_from most often: the commonest move comes first
ACTIONS = ("completed", "failed", "heartbeat", "progress", "output", "cancelled", "timed_out", "queued",
           "delete", "running")  # fmt: skip
#: progress and / or message sent with a move (PATCH), and the error sent with a failure
reports = st.fixed_dictionaries(
    {}, optional={"progress": st.integers(0, 100), "message": st.text(max_size=5)}
)
errors = st.one_of(
    st.none(),
    st.text(min_size=1, max_size=5),
    st.fixed_dictionaries({"kind": st.sampled_from(KINDS)}, optional={"message": st.text(max_size=5)}),
)
#: one move on a job: (which job, what to do, which attempt to name, output, progress, error)
moves = st.tuples(
    jobs, st.sampled_from(ACTIONS), attempts, st.one_of(st.just(NO_OUTPUT), outputs), reports, errors
)
#: how far the clock moves before a scheduler tick, in ms: around every deadline the settings make
bulk_filters = st.fixed_dictionaries(
    {"action": st.sampled_from(("requeue", "cancel", "delete"))},
    optional={
        "queue": queues,
        "status": st.one_of(
            st.sampled_from(("failed", "timed_out", "cancelled", "queued", "running", "scheduled")),
            st.sampled_from((["failed", "timed_out"], ["queued", "scheduled"])),  # the dashboard's, a drain's
        ),
        "tag": st.sampled_from(TAGS),
        "error_kind": st.sampled_from(KINDS),
        "since": st.sampled_from((-3_600_000, -1000, 0)),
        "dry_run": st.booleans(),
    },
)
steps = st.one_of(
    st.sampled_from((1000, 0, 1, 999, 5000, 30_000, 60_000, 3_600_000)), st.integers(0, 4_000_000)
)

Move = tuple[tuple[str, int], str, str, Any, dict[str, Any], Any]

#: named launchers: a few names, and declarations from a small set
LAUNCHER_NAMES = ("l1", "l2")
LAUNCHER_SPECS: tuple[dict[str, Any], ...] = (
    {"type": "@interval", "arguments": "5s", "max_pending": 1},
    {"type": "@interval", "arguments": "30s"},
    {"type": "@cron", "arguments": "*/10 * * * * *", "template": {"unique_key": "u1", "input": [1]}},
    {"type": "@cron", "arguments": "0 * * * *", "tz": "Europe/Paris", "max_pending": 2},
    {"type": "@event", "arguments": {"type": "job_completed"}, "max_pending": 1},
)
LAUNCHER_ACTIONS = ("fire", "pause", "resume", "delete")


def _delete_namespace(client: redis.Redis, namespace: str) -> None:
    for key in client.scan_iter(match=Keys(namespace).pattern(), count=1000):
        client.delete(key)


class LedgerMachine(RuleBasedStateMachine):
    """One ledger in a fresh namespace, on a frozen clock, driven by random commands."""

    redis_url: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        self.client = redis.Redis.from_url(self.redis_url)
        self.namespace = "test-sm-" + uuid.uuid4().hex[:12]
        self.freezer = freeze_time(START)
        self.clock = self.freezer.start()
        self.ledger = Ledger(self.client, self.namespace)
        self.archive_root = Path(tempfile.mkdtemp(prefix="jobledger-sm-"))
        self.archive = local_archive(self.archive_root, self.namespace)
        #: (actor, Idempotency-Key) -> (request hash, ids) of the last create that recorded it
        self.answers: dict[tuple[str, str], tuple[str, list[int]]] = {}
        self.last_keyed: tuple[str, list[dict[str, Any]], bool, str, int] | None = None

    def teardown(self) -> None:
        """After the last step, replay equality; skipped when a step already failed (so the first
        failure is the one reported)."""
        try:
            differences = [] if sys.exc_info()[0] else self.replay_differences() + self.totals_differences()
        finally:
            self.freezer.stop()
            _delete_namespace(self.client, self.namespace)
            shutil.rmtree(self.archive_root, ignore_errors=True)
            self.client.close()
        assert differences == []

    # --- choosing jobs and attempts, running commands ----------------------------------------------

    def statuses(self) -> dict[int, str]:
        """Every live job's status, by id."""
        last = int(self.client.get(self.ledger.keys.build("job_id")) or 0)
        pipe = self.client.pipeline(transaction=False)
        for job_id in range(1, last + 1):
            pipe.hget(self.ledger.keys.job(job_id), "status")
        found = zip(range(1, last + 1), pipe.execute(), strict=True)
        return {job_id: status.decode() for job_id, status in found if status is not None}

    def choose(self, choice: tuple[str, int]) -> int:
        """A running job, any live job, or a job that does not exist (any, when none is running)."""
        kind, pick = choice
        statuses = self.statuses()
        if kind == "gone" or not statuses:
            last = int(self.client.get(self.ledger.keys.build("job_id")) or 0)
            gone = [i for i in range(1, last + 2) if i not in statuses]
            return gone[pick % len(gone)]
        running = [i for i, status in statuses.items() if status == "running"]
        pool = running if kind == "running" and running else sorted(statuses)
        return pool[pick % len(pool)]

    def attempt(self, job_id: int, which: str) -> int | None:
        """The attempt an update names: none, the job's current one, or another (earlier if any)."""
        if which == "none":
            return None
        current = int(self.client.hget(self.ledger.keys.job(job_id), "attempt") or 0)
        if which == "current":
            return max(current, 1)
        return current - 1 if current > 1 else current + 1

    def call(self, job_id: int, move: Move) -> Call[Any]:
        """The command for one move on a job."""
        action = move[1]
        if action == "heartbeat":
            return commands.heartbeat(job_id, self.attempt(job_id, move[2]))
        if action == "delete":
            return commands.delete_job(job_id)
        return commands.update_job(job_id, self.update(job_id, move))

    def update(self, job_id: int, move: Move) -> JobUpdate:
        """The update of a move that is one (not a heartbeat nor a delete)."""
        _, action, which, output, report, error = move
        attempt = self.attempt(job_id, which)
        fields: dict[str, Any] = {"attempt": attempt, **report}
        if action == "progress":
            fields.setdefault("progress", 50)
        elif action != "output":
            fields["status"] = action
        if action in ("failed", "timed_out") and error is not None:
            fields["error"] = error
        if output != NO_OUTPUT or action == "output":
            fields["output"] = None if output == NO_OUTPUT else output
        return JobUpdate(**fields)

    def queued(self, name: str) -> list[int]:
        """The queue's queued jobs in hand-out order (none when it does not exist)."""
        if not self.client.exists(self.ledger.keys.queue(name)):
            return []
        return self.ledger.read(readers.queue_job_ids(name))["queued"]

    def options(self, drawn: dict[str, Any]) -> JobOptions:
        """JobOptions from drawn keywords, a drawn run_at taken relative to the frozen clock."""
        fields = dict(drawn)
        start = fields.pop("start", None)
        if start and start[0] == "run_at":
            fields["run_at"] = format_time(self.ledger.clock() + start[1])
        elif start:
            fields["delay"] = start[1]
        return JobOptions(**fields)

    def create(self, name: str, drawn: dict[str, Any]) -> None:
        """Create a job; when its unique_key is held, the holder answers and nothing is appended."""
        options = self.options(drawn)
        length = stream_length(self.client, self.namespace)
        made: Created | None = self.run(commands.create_job(name, options))
        if made is None or made.created:
            return
        assert stream_length(self.client, self.namespace) == length
        holder = decode_hash(self.client.hgetall(self.ledger.keys.job(made.id)))
        assert (holder["queue"], holder["unique_key"]) == (name, options.unique_key)
        assert holder.get("ended") != "1"

    def run(self, call: Call[Any]) -> Any:
        """Run a command; a refusal is fine but must append nothing."""
        length = stream_length(self.client, self.namespace)
        try:
            return self.ledger.run(call)
        except (NotFound, Conflict, Mismatch):
            assert stream_length(self.client, self.namespace) == length
            return None

    # --- rules -------------------------------------------------------------------------------------

    @initialize(
        all_settings=st.tuples(queue_settings, queue_settings, queue_settings),
        jobs=st.lists(st.tuples(queues, job_options), min_size=2, max_size=10),
    )
    def start(self, all_settings: tuple[QueueSettings, ...], jobs: list[tuple[str, dict[str, Any]]]) -> None:
        """The three queues, then a few jobs on them."""
        for name, chosen in zip(QUEUES, all_settings, strict=True):
            self.run(commands.put_queue(name, chosen))
        for name, drawn in jobs:
            self.create(name, drawn)

    @rule(name=queues, chosen=queue_settings, delete=st.sampled_from((False, False, False, True)))
    def put_or_delete_queue(self, name: str, chosen: QueueSettings, delete: bool) -> None:
        if delete:
            self.run(commands.delete_queue(name))
        else:
            self.run(commands.put_queue(name, chosen))

    @rule(name=queues, options=st.lists(job_options, min_size=1, max_size=4))
    def create_jobs(self, name: str, options: list[dict[str, Any]]) -> None:
        for drawn in options:
            self.create(name, drawn)

    @rule(
        name=queues,
        options=st.lists(job_options, min_size=1, max_size=3),
        batch=st.booleans(),
        key=st.sampled_from(IDEMPOTENCY_KEYS),
        window=st.sampled_from(WINDOWS),
    )
    def create_with_key(
        self, name: str, options: list[dict[str, Any]], batch: bool, key: str, window: int
    ) -> None:
        self.last_keyed = (name, options, batch, key, window)
        self.send_with_key(name, options, batch, key, window)

    @rule()
    def send_again_with_key(self) -> None:
        """The last create with an Idempotency-Key, sent again (a client that lost the answer)."""
        if self.last_keyed is not None:
            self.send_with_key(*self.last_keyed)

    def send_with_key(
        self, name: str, options: list[dict[str, Any]], batch: bool, key: str, window: int
    ) -> None:
        """A create with an Idempotency-Key: one job, or a batch.  Sent again with the same request,
        the first answer comes back and nothing is appended; with another, it is refused."""
        request = json.dumps([name, batch, options if batch else options[0]], sort_keys=True, default=str)
        idempotency = Idempotency(key, hashlib.sha256(request.encode()).hexdigest(), window)
        length = stream_length(self.client, self.namespace)
        if batch:
            made = self.run(commands.create_jobs(name, [self.options(o) for o in options], idempotency))
        else:
            one = self.run(commands.create_job(name, self.options(options[0]), idempotency=idempotency))
            made = None if one is None else [one]
        if made is None:
            return
        ids, mine = [m.id for m in made], (self.ledger.actor, key)
        if any(m.again for m in made):
            assert all(m.again for m in made)
            assert stream_length(self.client, self.namespace) == length
            assert self.answers[mine] == (idempotency.request_hash, ids)
        elif any(m.created for m in made):
            self.answers[mine] = (idempotency.request_hash, ids)

    def paused(self, name: str) -> bool:
        return self.client.hget(self.ledger.keys.queue(name), "paused") is not None

    def pick(self, name: str) -> str:
        """The queue a fetch names: one of QUEUES, the one with most queued jobs ("busiest"), or the one
        with most queued jobs of those not paused ("ready")."""
        if name not in ("busiest", "ready"):
            return name
        sizes = {q: counts["queued"] for q, counts in self.ledger.read(readers.info())["queues"].items()}
        pipe = self.client.pipeline(transaction=False)
        for q in QUEUES:
            pipe.hexists(self.ledger.keys.queue(q), "paused")
        paused = dict(zip(QUEUES, pipe.execute(), strict=True))
        return max(QUEUES, key=lambda q: sizes.get(q, 0) if name == "busiest" or not paused[q] else -1)

    def fetch_head(self, name: str, count: int, worker: str | None) -> list[Fetched]:
        """Fetch: the head of the queue, in order (highest priority, then oldest); none when paused."""
        name = self.pick(name)
        head = [] if self.paused(name) else self.queued(name)[:count]
        fetched: list[Fetched] = self.run(commands.fetch_jobs(name, count, worker)) or []
        assert [job.id for job in fetched] == head
        for job in fetched:
            assert job.attempt == int(self.client.hget(self.ledger.keys.job(job.id), "attempt") or 0)
        return fetched

    @rule(name=fetch_from, count=st.integers(1, 5), worker=st.one_of(st.none(), st.just("w1")))
    def fetch(self, name: str, count: int, worker: str | None) -> None:
        self.fetch_head(name, count, worker)

    @rule(end=st.sampled_from(("failed", "completed", "cancelled", "timed_out")), report=reports,
          error=errors)  # fmt: skip
    def work(self, end: str, report: dict[str, Any], error: Any) -> None:
        """A worker's round on one job of the busiest queue not paused: fetch it, maybe report progress,
        end its run (a failure with an error); every update names the running attempt, so each is taken."""
        for job in self.fetch_head("ready", 1, "w2"):
            if report:
                assert self.run(commands.update_job(job.id, JobUpdate(attempt=job.attempt, **report))) == 1
            fields: dict[str, Any] = {"status": end, "attempt": job.attempt}
            if end in ("failed", "timed_out") and error is not None:
                fields["error"] = error
            assert self.run(commands.update_job(job.id, JobUpdate(**fields))) == 1

    @rule(pick=st.integers(0, 1000), name=st.sampled_from(("r1", "r2")), blob=st.sampled_from(BLOBS),
          stale=st.sampled_from((False, False, False, True)))  # fmt: skip
    def add_result(self, pick: int, name: str, blob: str, stale: bool) -> None:
        """The running attempt of a job adds a result (one of the same name is replaced); a stale
        attempt is refused."""
        running = [i for i, status in self.statuses().items() if status == "running"]
        if not running:
            return
        job_id = running[pick % len(running)]
        attempt = int(self.client.hget(self.ledger.keys.job(job_id), "attempt") or 0)
        ref = FileRef(name=name, sha256=blob, size=3, media_type="text/plain")
        added = self.run(commands.add_result(job_id, ref, attempt + 1 if stale else attempt))
        assert (added is None) == stale

    @rule(pick=st.integers(0, 1000), stale=st.sampled_from((False, False, False, True)))
    def hand_back(self, pick: int, stale: bool) -> None:
        """A stopping worker hands a running job back (running -> queued, no retry counted), fetching
        one first when none runs; one that names an attempt that is not the running one is refused."""
        running = [i for i, status in self.statuses().items() if status == "running"]
        running = running or [job.id for job in self.fetch_head("ready", 1, "w3")]
        if not running:
            return
        job_id = running[pick % len(running)]
        key = self.ledger.keys.job(job_id)
        queue, *counts = self.client.hmget(key, "queue", "attempt", "retries_attempted")
        attempt, retries = (int(v or 0) for v in counts)
        name = queue.decode() if isinstance(queue, bytes) else ""
        queue_exists = self.client.exists(self.ledger.keys.queue(name))
        appended = self.run(commands.return_job(job_id, attempt + 1 if stale else attempt))
        if stale or not queue_exists:
            assert appended is None and self.statuses()[job_id] == "running"
            return
        assert appended == 1 and self.statuses()[job_id] == "queued"
        assert int(self.client.hget(key, "retries_attempted") or 0) == retries

    @rule(moves=st.lists(moves, min_size=1, max_size=3))
    def act(self, moves: list[Move]) -> None:
        """A few moves on jobs: heartbeat, progress, output, a new status (any: a failure or a timeout
        with an error; one the table refuses appends nothing), or delete."""
        for move in moves:
            job_id = self.choose(move[0])
            self.run(self.call(job_id, move))

    @rule(moves=st.lists(moves, min_size=1, max_size=4))
    def act_in_one_call(self, moves: list[Move]) -> None:
        """Updates of several jobs in one update_jobs call: each taken or refused on its own, and the
        events appended are exactly those of the updates taken."""
        updates = []
        for move in moves:
            if move[1] not in ("heartbeat", "delete"):
                job_id = self.choose(move[0])
                updates.append((job_id, self.update(job_id, move)))
        length = stream_length(self.client, self.namespace)
        results = self.ledger.run(commands.update_jobs(updates))
        assert len(results) == len(updates)
        assert all(isinstance(r, int | NotFound | Conflict) for r in results), results
        appended = sum(r for r in results if isinstance(r, int))
        assert stream_length(self.client, self.namespace) == length + appended

    @rule(name=queues, paused=st.booleans())
    def pause_or_resume(self, name: str, paused: bool) -> None:
        """Pause or resume; one that changes nothing appends nothing."""
        length = stream_length(self.client, self.namespace)
        if self.run(commands.pause_queue(name, paused)) is not True:
            assert stream_length(self.client, self.namespace) == length

    @rule(
        name=st.sampled_from(("ci-bot", "ops")),
        secret=st.sampled_from(("s1", "s2", "s3")),
        scopes=st.sampled_from((["admin"], ["read", "produce:mail*"], ["work:*"])),
        revoke=st.booleans(),
    )
    def create_or_revoke_token(self, name: str, secret: str, scopes: list[str], revoke: bool) -> None:
        """Tokens are events like the rest: their lookup replays (a name or secret already live is
        refused, a revoke of no live token too, each appending nothing)."""
        if revoke:
            self.run(revoke_token(name))
        else:
            self.run(create_token(name, scopes, digest(secret)))

    @rule(drawn=bulk_filters, batch=st.integers(1, 8), finish=st.sampled_from((True, True, False)))
    def bulk(self, drawn: dict[str, Any], batch: int, finish: bool) -> None:
        """A bulk operation: its start, its batches over every id handed out (each job checked in
        the script against the filter and the action's transition), and its end, or none (cut
        short); or a dry run, which appends nothing."""
        fields = dict(drawn)
        if "since" in fields:
            fields["since"] = format_time(self.ledger.clock() + fields["since"])
        request = BulkRequest.model_validate(fields)
        last = int(self.client.get(self.ledger.keys.build("job_id")) or 0)
        operation = None if request.dry_run else self.run(bulk_start(request))
        length = stream_length(self.client, self.namespace)
        for at in range(1, last + 2, batch):
            ids = list(range(at, min(last + 2, at + batch)))
            matched, done = self.run(bulk_jobs(0, request.action, operation, request, ids))
            length += done
            assert stream_length(self.client, self.namespace) == length and done <= matched
        if operation is not None and finish:
            self.run(bulk_finish(operation, 0, 0))

    @rule(name=st.sampled_from(LAUNCHER_NAMES), queue=queues, spec=st.sampled_from(LAUNCHER_SPECS))
    def declare_launcher(self, name: str, queue: str, spec: dict[str, Any]) -> None:
        """Declare a named launcher: the same declaration again appends nothing."""
        declared = LauncherSpec.model_validate({**spec, "queue": queue})
        length = stream_length(self.client, self.namespace)
        done = self.run(put_launcher(name, declared, self.ledger.clock()))
        if done is not None and done.outcome == "unchanged":
            assert stream_length(self.client, self.namespace) == length

    @rule(name=st.sampled_from(LAUNCHER_NAMES), action=st.sampled_from(LAUNCHER_ACTIONS))
    def act_on_launcher(self, name: str, action: str) -> None:
        """Fire a named launcher by hand (refused while held back), pause, resume or delete it."""
        found = self.ledger.read(launcher_readers.launcher_named(name))
        if found is None:
            return
        if action == "fire":
            self.run(commands.fire_launcher_now(found))
        elif action == "pause":
            self.run(commands.pause_launcher(found))
        elif action == "resume":
            view = self.ledger.read(launcher_readers.launcher(found))
            self.run(resume_launcher(found, view["type"], view["arguments"], view["tz"], self.ledger.clock()))
        else:
            self.run(commands.delete_launcher(found))

    @rule(actor=st.sampled_from(("local", "ci-bot", "deploy:prod")))
    def act_as(self, actor: str) -> None:
        """The commands that follow run as another actor: who caused an event is the stream's
        record only, so the projections (and their replay) are the same whoever acts."""
        self.ledger = self.ledger.as_actor(actor)

    @rule(ms=steps)
    def advance_and_tick(self, ms: int) -> None:
        self.clock.tick(ms / 1000)
        tick(self.ledger, batch=2)

    @rule(age=st.sampled_from((-1, -1, 1000, 60_000)))
    def archive_old(self, age: int) -> None:
        """Retention: the events older than ``age`` ms (-1: every event) move into the archive, and
        the jobs that expired or were deleted with every event archived leave Redis whole."""
        cutoff = int(self.clock().replace(tzinfo=UTC).timestamp() * 1000) - age
        archive(self.redis_url, self.namespace, self.archive, cutoff, segment_events=5)

    # --- invariants --------------------------------------------------------------------------------

    @invariant()
    def every_job_is_in_its_place(self) -> None:
        assert misplaced(self.client, self.namespace) == []

    def totals_differences(self) -> list[str]:
        """Each queue's totals against a count of the stream's events of that queue."""
        counted = {q: dict.fromkeys(OUTCOME_OF.values(), 0) for q in QUEUES}
        for event in self.all_events():
            if event["type"] in OUTCOME_OF and event["queue"] in counted:
                counted[event["queue"]][OUTCOME_OF[event["type"]]] += 1
        kept = self.ledger.read(queue_totals(list(QUEUES)))
        found = {q: {o: kept[q].outcomes[o] for o in OUTCOME_OF.values()} for q in QUEUES}
        waits = [f"{q}: {t.wait.count} waits, {t.outcomes['started']} starts"
                 for q, t in kept.items() if t.wait.count != t.outcomes["started"]]  # fmt: skip
        return waits + ([f"totals {found}, events {counted}"] if found != counted else [])

    def all_events(self) -> list[dict[str, str]]:
        """Every event of the ledger, archived ones first, as text fields plus ``id``."""
        return [
            {"id": entry_id.decode(), **{k.decode(): v.decode() for k, v in fields.items()}}
            for entries in read_ledger(self.client, self.ledger.keys, archive=self.archive)
            for entry_id, fields in entries
        ]

    def replay_differences(self) -> list[str]:
        """Rebuild the projections from the archive and the stream, compare them with the live ones."""
        replay = self.namespace + "-replay"
        try:
            rebuild(self.client, self.namespace, replay, archive=self.archive)
            return [str(d) for d in compare(self.client, self.namespace, replay)]
        finally:
            _delete_namespace(self.client, replay)


@pytest.mark.timeout(900)  # let Hypothesis finish shrinking a failure (it gives up after 5 minutes)
def test_replay_equals_live_and_every_job_is_in_place(redis_url: str) -> None:
    LedgerMachine.redis_url = redis_url
    run_state_machine_as_test(
        LedgerMachine,
        settings=settings(
            max_examples=40,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
