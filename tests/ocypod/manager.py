"""Ocypod's ``RedisManager`` and its tests' ``QueueWrapper``, over HTTP: each call is the request an
Ocypod client makes for it, and answers what the Rust function returns (or raises the ``OcyError``
it returns).  The three background checks, which Ocypod's tests call directly and which have no HTTP
route, run as another client of the ledger would: the scheduler's commands, on the server's
namespace.  Bodies are written as Ocypod's serde writes them (durations in humantime's words)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
import redis

from jobledger.ledger import commands
from jobledger.ledger.commands import Call
from jobledger.ledger.durations import parse_ms
from jobledger.ledger.partitioned import Partitioned, open_ledger, runners_of
from jobledger.ledger.runner import Ledger
from tests.support.ledger import TEST_PARTITIONS, nth_id

DEFAULT_QUEUE = "default"
BATCH = 500
#: humantime's spans, largest first: (seconds, name, plural name gets an "s")
_SPANS = ((31_557_600, "year", True), (2_630_016, "month", True), (86_400, "day", True),
          (3_600, "h", False), (60, "m", False), (1, "s", False))  # fmt: skip


def humantime(seconds: int) -> str:
    """A duration as Ocypod writes it (humantime's format_duration): ``"1day"``, ``"20m 34s"``."""
    parts, rest = [], seconds
    for size, name, plural in _SPANS:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{name}{'s' if plural and count > 1 else ''}")
    return " ".join(parts) or "0s"


def seconds(duration: str) -> int:
    """A duration the server wrote, in whole seconds (Ocypod's Duration)."""
    return parse_ms(duration) // 1000


class OcyError(Exception):
    """Ocypod's error kinds, as the HTTP answers say them."""


class NoSuchJob(OcyError):
    pass


class NoSuchQueue(OcyError):
    pass


class Conflict(OcyError):
    pass


@dataclass(frozen=True)
class Settings:
    """Ocypod's ``queue::Settings``, durations in seconds; its defaults."""

    timeout: int = 300
    heartbeat_timeout: int = 0
    expires_after: int = 300
    retries: int = 0
    retry_delays: tuple[int, ...] = ()

    def body(self) -> dict[str, Any]:
        names = ("timeout", "heartbeat_timeout", "expires_after")
        durations = {name: humantime(getattr(self, name)) for name in names}
        delays = [humantime(d) for d in self.retry_delays]
        return {**durations, "retries": self.retries, "retry_delays": delays}

    @classmethod
    def read(cls, view: dict[str, Any]) -> Settings:
        delays = tuple(seconds(d) for d in view["retry_delays"])
        timeout, beat, expires = (seconds(view[n]) for n in ("timeout", "heartbeat_timeout", "expires_after"))
        return cls(timeout, beat, expires, retries=view["retries"], retry_delays=delays)


def delays(job: dict[str, Any]) -> list[int] | None:
    """A job's ``retry_delays`` as Ocypod's ``Option<Vec<Duration>>`` (seconds)."""
    given = job["retry_delays"]
    return None if given is None else [seconds(d) for d in given]


def job_request(**fields: Any) -> dict[str, Any]:
    """A ``job::CreateRequest`` body: the fields given, durations (seconds) in humantime's words."""
    for name in ("timeout", "heartbeat_timeout", "expires_after"):
        if name in fields:
            fields[name] = humantime(fields[name])
    if "retry_delays" in fields:
        fields["retry_delays"] = [humantime(d) for d in fields["retry_delays"]]
    return fields


@dataclass
class Manager:
    """``RedisManager``'s functions over HTTP.  ``status_via`` picks how ``job_status`` reads: Ocypod's
    ``GET /job/{id}/status`` ("route") or ``GET /job/{id}?fields=status`` ("fields")."""

    http: httpx2.Client
    ledger: Ledger | Partitioned
    status_via: str = "route"

    # --- queues

    def create_or_update_queue(self, name: str, settings: Settings) -> bool:
        response = self.http.put(f"/queue/{name}", json=settings.body())
        return {201: True, 204: False}[_ok(response, 201, 204)]

    def delete_queue(self, name: str) -> bool:
        return {204: True, 404: False}[_ok(self.http.delete(f"/queue/{name}"), 204, 404)]

    def queue_names(self) -> list[str]:
        return list(_json(self.http.get("/queue")))

    def queue_settings(self, name: str) -> Settings:
        return Settings.read(_json(self.http.get(f"/queue/{name}"), queue=name))

    def queue_size(self, name: str) -> int:
        return int(_json(self.http.get(f"/queue/{name}/size"), queue=name))

    def server_info(self) -> dict[str, Any]:
        return dict(_json(self.http.get("/info")))

    def _by_status(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for queue in self.server_info()["queues"].values():
            for status, count in queue.items():
                counts[status] = counts.get(status, 0) + count
        return counts

    def running_queue_size(self) -> int:
        """Ocypod's ``running`` list: the running jobs of every queue."""
        return self._by_status().get("running", 0)

    def failed_queue_size(self) -> int:
        """Ocypod's ``failed`` list: its failed and timed-out jobs (its retry check has not run)."""
        counts = self._by_status()
        return counts.get("failed", 0) + counts.get("timed_out", 0)

    def ended_queue_size(self) -> int:
        """Ocypod's ``ended`` list, as the tests that read it have it: completed and cancelled jobs."""
        counts = self._by_status()
        return counts.get("completed", 0) + counts.get("cancelled", 0)

    # --- jobs

    def create_job(self, queue: str, request: dict[str, Any]) -> int:
        return int(_json(self.http.post(f"/queue/{queue}/job", json=request), 201, queue=queue))

    def next_queued_job(self, queue: str) -> dict[str, Any] | None:
        response = self.http.get(f"/queue/{queue}/job")
        return None if _ok(response, 200, 204, queue=queue) == 204 else dict(response.json())

    def job_fields(self, job_id: int, fields: list[str] | None = None) -> dict[str, Any]:
        query = {"fields": ",".join(fields)} if fields else {}
        return dict(_json(self.http.get(f"/job/{job_id}", params=query), job=job_id))

    def job_status(self, job_id: int) -> str:
        if self.status_via == "route":
            return str(_json(self.http.get(f"/job/{job_id}/status"), job=job_id))
        return str(self.job_fields(job_id, ["status"])["status"])

    def update_job(self, job_id: int, status: str | None = None, output: Any = None) -> None:
        """``job::UpdateRequest`` as serde writes it: both fields, null when unset."""
        _ok(self.http.patch(f"/job/{job_id}", json={"status": status, "output": output}), 204, job=job_id)

    def set_job_status(self, job_id: int, status: str) -> None:
        self.update_job(job_id, status=status)

    def job_output(self, job_id: int) -> Any:
        return _json(self.http.get(f"/job/{job_id}/output"), job=job_id)

    def set_job_output(self, job_id: int, value: Any) -> None:
        _ok(self.http.put(f"/job/{job_id}/output", json=value), 204, job=job_id)

    def update_job_heartbeat(self, job_id: int) -> None:
        _ok(self.http.put(f"/job/{job_id}/heartbeat"), 204, job=job_id)

    def delete_job(self, job_id: int) -> bool:
        return {204: True, 404: False}[_ok(self.http.delete(f"/job/{job_id}"), 204, 404)]

    def tagged_job_ids(self, tag: str) -> list[int]:
        return list(_json(self.http.get(f"/tag/{tag}")))

    def check_ping(self) -> None:
        assert _json(self.http.get("/health")) == {"status": "healthy"}

    # --- the background checks: the scheduler's commands, from another client

    def nth(self, n: int, queue: str = DEFAULT_QUEUE) -> int:
        """The id of the ``n``-th job created in ``queue``'s partition since the wipe: ``n``, as Ocypod
        hands them out, unless the ledger is split (then partition p of N hands out p + N, p + 2N, ...)."""
        namespace = self.ledger.partitioning.namespace if isinstance(self.ledger, Partitioned) else ""
        return nth_id(namespace, n, queue)

    def close(self) -> None:
        self.http.close()
        for runner in runners_of(self.ledger):
            runner.client.close()

    def _on_each_partition(self, call: Call[list[int]]) -> list[int]:
        return [job_id for runner in runners_of(self.ledger) for job_id in runner.run(call)]

    def check_job_timeouts(self) -> list[int]:
        return self._on_each_partition(commands.check_timeouts(BATCH))

    def check_job_retries(self) -> list[int]:
        """The jobs requeued (the check also ends, without requeuing, a job whose queue is gone)."""
        handled = self._on_each_partition(commands.check_retries(BATCH))
        return [job_id for job_id in handled if self.job_fields(job_id, ["status"])["status"] == "queued"]

    def check_job_expiry(self) -> list[int]:
        return self._on_each_partition(commands.check_expiry(BATCH))


def _ok(response: httpx2.Response, *codes: int, job: int | None = None, queue: str | None = None) -> int:
    """The status code if expected, else the OcyError it means."""
    code = response.status_code
    if code in codes:
        return code
    if code == 404 and job is not None:
        raise NoSuchJob(job)
    if code == 404 and queue is not None:
        raise NoSuchQueue(queue)
    if code == 409:
        raise Conflict(response.json()["error"])
    raise AssertionError(f"unexpected answer {code}: {response.text}")


def _json(response: httpx2.Response, *codes: int, job: int | None = None, queue: str | None = None) -> Any:
    _ok(response, *(codes or (200,)), job=job, queue=queue)
    return response.json()


@dataclass
class QueueWrapper:
    """The Rust tests' helper around one queue."""

    m: Manager
    queue_name: str = DEFAULT_QUEUE

    @classmethod
    def with_default_queue(cls, m: Manager) -> QueueWrapper:
        qw = cls(m)
        qw.create_queue()
        return qw

    def queue_size(self) -> int:
        return self.m.queue_size(self.queue_name)

    def nth(self, n: int) -> int:
        """The id of the ``n``-th job created in this queue's partition (see :meth:`Manager.nth`)."""
        return self.m.nth(n, self.queue_name)

    def create_queue(self) -> None:
        try:
            self.m.queue_size(self.queue_name)
            raise AssertionError("the queue exists before it is created")
        except NoSuchQueue as error:
            assert error.args == (self.queue_name,)
        assert self.m.create_or_update_queue(self.queue_name, Settings())

    def new_job(self, request: dict[str, Any]) -> dict[str, Any]:
        job_id = self.m.create_job(self.queue_name, request)
        info = self.job_meta(job_id)
        assert info["status"] == "queued"
        return info

    def new_default_job(self) -> dict[str, Any]:
        return self.new_job({})

    def new_running_job(self, request: dict[str, Any]) -> dict[str, Any]:
        self.new_job(request)
        return self.next_job()

    def new_running_default_job(self) -> dict[str, Any]:
        return self.new_running_job({})

    def job_fields(self, job_id: int, fields: list[str]) -> dict[str, Any]:
        return self.m.job_fields(job_id, fields)

    def fail_job(self, job_id: int) -> dict[str, Any]:
        self.m.update_job(job_id, status="failed")
        info = self.job_meta(job_id)
        assert info["status"] == "failed"
        return info

    def complete_job(self, job_id: int) -> dict[str, Any]:
        self.m.update_job(job_id, status="completed")
        info = self.job_meta(job_id)
        assert info["status"] == "completed"
        assert info["started_at"] is not None
        assert info["ended_at"] is not None
        return info

    def next_job(self) -> dict[str, Any]:
        payload = self.m.next_queued_job(self.queue_name)
        assert payload is not None
        info = self.job_meta(payload["id"])
        assert info["status"] == "running"
        assert info["started_at"] is not None
        return payload

    def next_empty_job(self) -> None:
        assert self.m.next_queued_job(self.queue_name) is None

    def job_status(self, job_id: int) -> str:
        return self.m.job_status(job_id)

    def job_meta(self, job_id: int) -> dict[str, Any]:
        return self.m.job_fields(job_id)


def connect(url: str, redis_url: str, namespace: str, status_via: str) -> Manager:
    """A Manager on a served namespace: HTTP to ``url``, the checks on ``redis_url``."""
    ledger = (
        Ledger(redis.Redis.from_url(redis_url), namespace)
        if TEST_PARTITIONS is None
        else open_ledger(redis_url, namespace, TEST_PARTITIONS)
    )
    return Manager(httpx2.Client(base_url=url, timeout=30), ledger, status_via)
