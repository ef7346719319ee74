"""The route records: one per route, each naming its endpoint lazily, and none that lacks what the
token check needs can be built."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from starlette.testclient import TestClient

from jobledger.server.api_route import ApiPath, ApiRoute, RouteError
from jobledger.server.auth import PRODUCE_QUEUE, READ
from jobledger.server.openapi_paths import Operation
from jobledger.server.routes import ROUTES, warm

QUEUES = ("q",)

#: Endpoint modules a start loads for something else than a route's endpoint (the dashboard's pages,
#: the probes' limit, the metrics the app records).
LOADED_ANYWAY = {
    "jobledger.server.event_handlers",
    "jobledger.server.info_handlers",
    "jobledger.server.metrics",
}


def test_building_the_app_imports_no_endpoint_module_until_a_request_or_warm() -> None:
    code = (
        "import json, sys\n"
        "from jobledger.server.app import create_app\n"
        "from jobledger.runtime.config import load_config\n"
        "from jobledger.server.routes import ROUTES, warm\n"
        "create_app(load_config(None, environ={}), 'redis://127.0.0.1:1/0')\n"
        "modules = {r.endpoint.partition(':')[0] for r in ROUTES}\n"
        "print(json.dumps(sorted(m for m in modules if m in sys.modules)))\n"
        "warm()\n"
        "print(json.dumps(sorted(m for m in modules if m not in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    at_start, after_warm = (json.loads(line) for line in done.stdout.splitlines())
    assert set(at_start) <= LOADED_ANYWAY
    assert after_warm == []


def test_warm_resolves_and_keeps_every_endpoint() -> None:
    warm()
    for route in ROUTES:
        assert route.__dict__["handler"] is route.handler, route.name
        assert route.handler.__name__ == route.endpoint.rpartition(":")[2], route.name


def test_a_record_without_a_scope_cannot_be_built() -> None:
    with pytest.raises(RouteError, match=r"route GET /thing: no scope"):
        ApiRoute("GET", "/thing", "jobledger.server.info_handlers:info", operation="INFO")


def test_a_record_without_an_operation_cannot_be_built() -> None:
    with pytest.raises(RouteError, match=r"route GET /thing: no OpenAPI operation"):
        ApiRoute("GET", "/thing", "jobledger.server.info_handlers:info", READ)


def test_every_record_names_an_operation_that_exists() -> None:
    for route in ROUTES:
        assert isinstance(route.described, Operation), route.name
    missing = ApiRoute("GET", "/thing", "m:f", READ, "NO_SUCH_OPERATION")
    with pytest.raises(RouteError, match="route GET /thing: openapi_paths has no operation NO_SUCH"):
        missing.described  # noqa: B018


@pytest.mark.parametrize(
    ("method", "endpoint", "says"),
    [("GET", "info_handlers.info", "is not 'module:function'"), ("FETCH", "m:f", "method is not one of")],
)
def test_a_bad_method_or_endpoint_cannot_be_built(method: str, endpoint: str, says: str) -> None:
    with pytest.raises(RouteError, match=f"route {method} /thing.*{says}"):
        ApiRoute(method, "/thing", endpoint, READ, "INFO")


def test_a_route_twice_in_the_table_is_refused() -> None:
    twice = [ApiRoute("GET", "/thing", "m:f", READ, "INFO"), ApiRoute("GET", "/thing", "m:g", READ, "INFO")]
    with pytest.raises(RouteError, match="route GET /thing is in the table twice"):
        ApiPath(twice, read_only=False, auth=False)


def test_only_gets_read_unless_the_record_says_otherwise() -> None:
    writes = {route.name for route in ROUTES if route.writes}
    assert "GET /queue/{queue}/job" in writes  # a fetch starts jobs
    assert {route.name for route in ROUTES if route.method != "GET"} <= writes


def test_only_a_route_whose_record_is_idempotent_reads_the_idempotency_key(api: TestClient) -> None:
    create = "jobledger.server.queue_handlers:create_job"
    plain = ApiRoute("POST", "/plain/{queue}/job", create, PRODUCE_QUEUE, "CREATE_JOB")
    api.app.router.routes.append(ApiPath([plain], read_only=False, auth=False))  # type: ignore[attr-defined]
    key = {"idempotency-key": "k-1"}
    keyed = [api.post("/queue/q/job", json={"input": 1}, headers=key) for _ in range(2)]
    unkeyed = [api.post("/plain/q/job", json={"input": 1}, headers=key) for _ in range(2)]
    assert keyed[1].headers.get("idempotent-replayed") == "true"
    assert all(a.status_code == 201 and "idempotent-replayed" not in a.headers for a in unkeyed)
    assert len({a.json() for a in [*keyed, *unkeyed]}) == 3
