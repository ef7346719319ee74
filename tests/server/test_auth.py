"""Auth: every route but /health and /ready wants a bearer token whose scopes cover it.  No token, or
one the ledger does not know (wrong, revoked): 401 with WWW-Authenticate; out of scope: 403; both
JSON errors that append nothing and never name the secret."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret, revoke_token
from jobledger.server.routes import ROUTES
from tests.support.http import app_client

REQUIRES = {(route.method, route.path): route.needs for route in ROUTES}
OPEN = {("GET", "/health"), ("GET", "/ready")}
GUARDED = sorted(k for k in REQUIRES if k not in OPEN)
BODIES: dict[tuple[str, str], Any] = {
    ("PUT", "/queue/{queue}"): {},
    ("POST", "/queue/{queue}/job"): {"input": 1},
    ("POST", "/queue/{queue}/jobs"): {"jobs": [{"input": 1}]},
    ("PATCH", "/job/{job_id}"): {"progress": 5},
    ("PUT", "/job/{job_id}/output"): {"done": 1},
    ("POST", "/launcher"): {"type": "@interval", "arguments": "1h", "queue": "q-1"},
    ("PUT", "/launcher/{launcher}"): {"type": "@interval", "arguments": "1h", "queue": "q-1"},
}


def bearer(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


class Setup:
    """The app with auth on, queues ``q-1`` (holding a job) and ``zz``, and a token per scope set."""

    def __init__(self, api: TestClient, ledger: Ledger, client: redis.Redis) -> None:
        self.api, self.ledger, self.client = api, ledger, client
        self.secrets: dict[str, str] = {}
        self.add("admin", "admin")
        self.add("reader", "read")
        self.add("producer", "produce:q-*")
        self.add("worker", "work:q-1")
        self.add("elsewhere", "produce:other", "work:other")
        admin = bearer(self.secrets["admin"])
        assert api.put("/queue/q-1", json={}, headers=admin).status_code == 201
        assert api.put("/queue/zz", json={}, headers=admin).status_code == 201
        self.job = api.post("/queue/q-1/job", json={"tags": ["t"]}, headers=admin).json()
        bulk = {"action": "requeue", "queue": "q-1", "status": "failed"}  # a bulk operation, finished
        self.operation = api.post("/bulk", json=bulk, headers=admin).json()["operation"]

    def add(self, name: str, *scopes: str) -> str:
        secret = new_secret()
        self.ledger.run(create_token(name, list(scopes), digest(secret)))
        self.secrets[name] = secret
        return secret

    def path(self, template: str, queue: str = "q-1") -> str:
        return template.format(
            queue=queue,
            job_id=self.job,
            tag="t",
            launcher="nightly",
            name="data.txt",
            operation=self.operation,
        )

    def call(self, route: tuple[str, str], headers: dict[str, str], queue: str = "q-1") -> Any:
        method, template = route
        if route == ("POST", "/upload"):  # a form naming its queue as the service
            form = {"user_id": "1", "service": queue}
            return self.api.post("/upload", files=[("file", ("f", b"x"))], data=form, headers=headers)
        if route == ("POST", "/bulk"):  # a requeue of the queue's failed jobs
            bulk = {"action": "requeue", "queue": queue, "status": "failed"}
            return self.api.post("/bulk", json=bulk, headers=headers)
        if route == ("PATCH", "/jobs"):  # a job of the queue, and a fetch from it
            body = {"updates": [{"id": self.job, "progress": 5}], "fetch": {"queue": queue}}
            return self.api.patch("/jobs", json=body, headers=headers)
        return self.api.request(method, self.path(template, queue), json=BODIES.get(route), headers=headers)

    def length(self) -> int:
        return int(self.client.xlen(self.ledger.keys.events))


@pytest.fixture
def setup(redis_url: str, namespace: str, client: redis.Redis, ledger: Ledger) -> Iterator[Setup]:
    with app_client(redis_url, namespace, auth=True) as api:
        yield Setup(api, ledger, client)


@pytest.mark.parametrize("route", GUARDED, ids=" ".join)
@pytest.mark.parametrize("presented", ["none", "wrong", "revoked", "not bearer"])
def test_no_known_token_is_401_and_appends_nothing(
    setup: Setup, route: tuple[str, str], presented: str
) -> None:
    revoked = setup.add("gone", "admin")
    setup.ledger.run(revoke_token("gone"))
    headers = {
        "none": {},
        "wrong": bearer(new_secret()),
        "revoked": bearer(revoked),
        "not bearer": {"authorization": f"Basic {revoked}"},
    }[presented]
    before = setup.length()
    answer = setup.call(route, headers)
    assert answer.status_code == 401, answer.text
    assert answer.headers["www-authenticate"].startswith('Bearer realm="jobledger"')
    assert set(answer.json()) == {"error"} and revoked not in answer.text
    assert setup.length() == before


@pytest.mark.parametrize("route", sorted(OPEN), ids=" ".join)
def test_health_and_ready_stay_open(setup: Setup, route: tuple[str, str]) -> None:
    assert setup.call(route, {}).status_code == 200


def _allowed(name: str, route: tuple[str, str], queue: str) -> bool:
    """What the table says, spelled out by hand for each test token."""
    needs = REQUIRES[route]
    if name == "admin":
        return True
    if needs.kind == "admin" or needs.on == "query":  # the calls name no ?queue=: admin only
        return False
    if needs.kind == "read":
        if name == "reader":
            return True
        if needs.on is None or needs.on == "events":  # unfiltered here
            return False
        return (name == "producer" and queue.startswith("q-")) or (name == "worker" and queue == "q-1")
    if name == "producer":
        return needs.kind == "produce" and queue.startswith("q-")
    if name == "worker":
        return needs.kind == "work" and queue == "q-1"
    return False


@pytest.mark.parametrize("route", GUARDED, ids=" ".join)
@pytest.mark.parametrize("name", ["admin", "reader", "producer", "worker", "elsewhere"])
def test_scopes_in_and_out_of_their_glob(setup: Setup, route: tuple[str, str], name: str) -> None:
    queues = ["q-1", "zz"] if "{queue}" in route[1] else ["q-1"]
    for queue in queues:
        if route[1] == "/events/stream":
            continue  # a stream that stays open: its check is the same READ as /events
        before = setup.length()
        answer = setup.call(route, bearer(setup.secrets[name]), queue)
        if _allowed(name, route, queue):
            assert answer.status_code not in (401, 403), (queue, answer.text)
        else:
            assert answer.status_code == 403, (queue, answer.text)
            assert f"token '{name}'" in answer.json()["error"]
            assert setup.secrets[name] not in answer.text
            assert setup.length() == before


def test_stream_wants_read(setup: Setup) -> None:
    assert setup.call(("GET", "/events/stream"), bearer(setup.secrets["producer"])).status_code == 403
    assert setup.call(("GET", "/events/stream"), {}).status_code == 401


def test_a_job_that_does_not_exist(setup: Setup) -> None:
    """404 to a token that may read every queue; 403 to one scoped to queues (the job's history
    outlives it, and its queue is not known any more)."""
    for name, status in [("admin", 404), ("reader", 404), ("worker", 403), ("producer", 403)]:
        for path in ("/job/99999", "/job/99999/history"):
            assert setup.api.get(path, headers=bearer(setup.secrets[name])).status_code == status, (
                name,
                path,
            )


@pytest.mark.parametrize(
    ("name", "jobs", "fetch", "status"),
    [
        ("worker", ["q-1"], "q-1", 200),
        ("worker", ["q-1", "zz"], None, 403),  # one job on a queue it does not cover
        ("worker", ["q-1"], "zz", 403),
        ("worker", ["q-1", "none"], "q-1", 403),  # no such job: on no queue it covers
        ("elsewhere", ["q-1"], None, 403),
        ("producer", ["q-1"], None, 403),
        ("admin", ["q-1", "zz", "none"], "zz", 200),
    ],
)
def test_a_batch_needs_work_on_every_queue_it_touches(
    setup: Setup, name: str, jobs: list[str], fetch: str | None, status: int
) -> None:
    admin = bearer(setup.secrets["admin"])
    ids = {
        "q-1": setup.job,
        "zz": setup.api.post("/queue/zz/job", json={}, headers=admin).json(),
        "none": 99999,
    }
    body: dict[str, Any] = {"updates": [{"id": ids[q], "progress": 5} for q in jobs]}
    if fetch is not None:
        body["fetch"] = {"queue": fetch}
    before = setup.length()
    answer = setup.api.patch("/jobs", json=body, headers=bearer(setup.secrets[name]))
    assert answer.status_code == status, answer.text
    if status == 403:
        assert f"token '{name}'" in answer.json()["error"] and setup.length() == before


@pytest.mark.parametrize(
    ("name", "params", "status"),
    [
        ("worker", {"queue": "q-1"}, 200),
        ("producer", {"queue": "q-1"}, 200),
        ("worker", {"queue": "zz"}, 403),
        ("worker", {}, 403),
        ("worker", {"job": "JOB"}, 200),
        ("elsewhere", {"job": "JOB"}, 403),
        ("worker", {"job": "JOB", "queue": "zz"}, 403),
        ("worker", {"job": "99999"}, 403),
        ("reader", {}, 200),
    ],
)
def test_events_filtered_on_a_queue_the_token_covers(
    setup: Setup, name: str, params: dict[str, str], status: int
) -> None:
    params = {k: str(setup.job) if v == "JOB" else v for k, v in params.items()}
    answer = setup.api.get("/events", params=params, headers=bearer(setup.secrets[name]))
    assert answer.status_code == status, answer.text


def test_revoked_token_stops_at_once_on_every_server(redis_url: str, namespace: str, ledger: Ledger) -> None:
    secret = new_secret()
    ledger.run(create_token("ci", ["read"], digest(secret)))
    with (
        app_client(redis_url, namespace, auth=True) as one,
        app_client(redis_url, namespace, auth=True) as two,
    ):
        assert one.get("/queue", headers=bearer(secret)).status_code == 200
        assert two.get("/queue", headers=bearer(secret)).status_code == 200
        ledger.run(revoke_token("ci"))
        assert one.get("/queue", headers=bearer(secret)).status_code == 401
        assert two.get("/queue", headers=bearer(secret)).status_code == 401


def test_auth_off_needs_no_token(redis_url: str, namespace: str) -> None:
    with app_client(redis_url, namespace) as api:
        assert api.put("/queue/q", json={}).status_code == 201


def test_no_secret_in_logs_events_projections_or_errors(
    setup: Setup, client: redis.Redis, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts = []
    for secret in setup.secrets.values():
        for route in GUARDED:
            if route[1] != "/events/stream":
                texts.append(setup.call(route, bearer(secret)).text)
        texts.append(
            setup.api.get("/events", params={"limit": 1000}, headers=bearer(setup.secrets["admin"])).text
        )
    stored = []
    for key in client.scan_iter(match=Keys(namespace).pattern(), count=1000):
        kind = client.type(key)
        if kind == b"stream":
            stored += [repr(client.xrange(key))]
        elif kind == b"hash":
            stored += [repr(client.hgetall(key))]
        elif kind == b"string":
            stored += [repr(client.get(key))]
        elif kind == b"list":
            stored += [repr(client.lrange(key, 0, -1))]
        elif kind in (b"set", b"zset"):
            stored += [repr(client.zrange(key, 0, -1) if kind == b"zset" else client.smembers(key))]
    everything = "\n".join([*texts, *stored, caplog.text])
    assert "token_created" in everything  # the events were looked at
    for secret in setup.secrets.values():
        assert secret not in everything
        assert secret.removeprefix("jl_") not in everything


def test_each_event_names_the_token_that_caused_it(setup: Setup) -> None:
    api, secrets = setup.api, setup.secrets
    job = api.post("/queue/q-1/job", json={}, headers=bearer(secrets["producer"])).json()
    fetched = api.get("/queue/q-1/job", headers=bearer(secrets["worker"])).json()
    assert fetched["id"] == setup.job  # the oldest job first
    done = {"status": "completed", "attempt": fetched["attempt"]}
    assert api.patch(f"/job/{setup.job}", json=done, headers=bearer(secrets["worker"])).status_code == 204
    history = api.get(f"/job/{setup.job}/history", headers=bearer(secrets["reader"])).json()
    assert [(e["type"], e["actor"]) for e in history] == [
        ("job_created", "admin"), ("job_started", "worker"), ("job_completed", "worker"),
    ]  # fmt: skip
    created = api.get(f"/job/{job}/history", headers=bearer(secrets["reader"])).json()
    assert [(e["type"], e["actor"]) for e in created] == [("job_created", "producer")]
    by_producer = api.get("/events", params={"actor": "producer"}, headers=bearer(secrets["reader"]))
    assert [e["job"] for e in by_producer.json()["events"]] == [job]


KNOWN = sorted((r.method, r.path) for r in ROUTES if r.checks_token)


@pytest.mark.parametrize("route", KNOWN, ids=" ".join)
def test_a_token_the_server_knows_is_refused_at_once_once_revoked(
    setup: Setup, route: tuple[str, str]
) -> None:
    """A route whose first effect is a command or a read takes a token it has seen from memory, and
    its command or read checks the token again: revoked, it is a 401 that appends nothing."""
    secret = setup.add("soon-gone", "admin")
    assert setup.call(route, bearer(secret)).status_code != 401  # now known to this server
    setup.ledger.run(revoke_token("soon-gone"))
    before = setup.length()
    answer = setup.call(route, bearer(secret))
    assert answer.status_code == 401, answer.text
    assert answer.headers["www-authenticate"] == 'Bearer realm="jobledger", error="invalid_token"'
    assert answer.json() == {"error": "unknown or revoked token"}
    assert setup.length() == before


def test_a_known_token_costs_no_lookup(setup: Setup) -> None:
    worker = bearer(setup.secrets["worker"])
    assert (
        setup.api.post("/queue/q-1/job", json={}, headers=bearer(setup.secrets["admin"])).status_code == 201
    )
    assert setup.api.get("/queue/q-1/job", headers=worker).status_code == 200  # the token now known
    setup.client.config_resetstat()
    fetched = setup.api.get("/queue/q-1/job", headers=worker)
    assert fetched.status_code in (200, 204)
    ran = {k.removeprefix("cmdstat_"): v["calls"] for k, v in setup.client.info("commandstats").items()}
    assert ran.get("fcall") == 1 and "exec" not in ran, ran  # the fetch's command, and no read


def test_a_job_handed_out_to_a_known_token_costs_no_lookup_of_its_queue(setup: Setup) -> None:
    worker = bearer(setup.secrets["worker"])
    admin = bearer(setup.secrets["admin"])
    assert setup.api.get("/queue/q-1/job", headers=worker).status_code == 200  # the token now known
    setup.api.post("/queue/q-1/job", json={}, headers=admin)
    fetched = setup.api.get("/queue/q-1/job", headers=worker).json()
    unseen = setup.ledger.run(commands.create_job("q-1", JobOptions())).id  # not through this server
    setup.client.config_resetstat()
    done = {"status": "completed", "attempt": fetched["attempt"]}
    assert setup.api.patch(f"/job/{fetched['id']}", json=done, headers=worker).status_code == 204
    body = {"updates": [{"id": unseen, "progress": 5}]}
    assert setup.api.patch("/jobs", json=body, headers=worker).status_code == 200
    ran = {k.removeprefix("cmdstat_"): v["calls"] for k, v in setup.client.info("commandstats").items()}
    assert ran.get("fcall") == 2 and ran.get("exec") == 1, ran  # the job's queue read once, for the other


def test_a_known_token_is_refused_a_job_on_a_queue_it_does_not_cover(setup: Setup) -> None:
    admin, elsewhere = bearer(setup.secrets["admin"]), bearer(setup.secrets["elsewhere"])
    other = setup.api.post("/queue/zz/job", json={}, headers=admin).json()  # known to this server now
    assert setup.api.get("/queue/other/job", headers=elsewhere).status_code == 404  # the token now known
    before = setup.length()
    for path, body in (
        (f"/job/{other}", {"progress": 5}),
        ("/jobs", {"updates": [{"id": other, "progress": 5}]}),
    ):
        answer = setup.api.patch(path, json=body, headers=elsewhere)
        assert answer.status_code == 403, answer.text
        assert "zz" not in answer.text  # the job's queue is not named
    assert setup.length() == before
