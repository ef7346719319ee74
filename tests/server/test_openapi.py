"""``GET /openapi.json``: a valid OpenAPI 3.1 document that covers every route (those added later
too), with request bodies from the pydantic models, and whose schemas the real answers match."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from starlette.testclient import TestClient

from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from jobledger.server.app import create_app
from jobledger.server.openapi import openapi_path
from jobledger.server.routes import ROUTES
from tests.support.http import BASE_URL, create_job, fetch, make_config, put_queue

Doc = dict[str, Any]


@pytest.fixture
def doc(api: TestClient) -> Doc:
    response = api.get("/openapi.json")
    assert response.status_code == 200
    body: Doc = response.json()
    return body


def resolve(doc: Doc, schema: Doc) -> Doc:
    """Follow a ``#/components/schemas/...`` reference."""
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def body_schema(doc: Doc, method: str, path: str) -> Doc:
    return resolve(doc, doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"])


def conforms(doc: Doc, component: str, instance: Any) -> None:
    """``instance`` is valid against ``#/components/schemas/<component>`` of ``doc``."""
    registry: Registry[Any] = Registry().with_resource("urn:doc", DRAFT202012.create_resource(doc))
    schema = {"$ref": f"urn:doc#/components/schemas/{component}"}
    Draft202012Validator(schema, registry=registry).validate(instance)


def test_document_is_valid_openapi_3_1(doc: Doc) -> None:
    assert doc["openapi"].startswith("3.1")
    validate(doc)


def test_every_route_is_described(doc: Doc) -> None:
    for route in ROUTES:
        method, path = route.method, route.path
        operation = doc["paths"][openapi_path(path)][method.lower()]
        assert operation["responses"], (method, path)
        declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
        assert declared == set(path.replace("}", "{").split("{")[1::2]), (method, path)


def test_bodies_come_from_the_pydantic_models(doc: Doc) -> None:
    create = body_schema(doc, "post", "/queue/{queue}/job")
    assert set(create["properties"]) == set(JobOptions.model_fields)
    assert create["additionalProperties"] is False
    settings = body_schema(doc, "put", "/queue/{queue}")
    assert set(settings["properties"]) == set(QueueSettings.model_fields)
    batch = doc["paths"]["/queue/{queue}/jobs"]["post"]["requestBody"]["content"]["application/json"]
    batch = batch["schema"]
    assert batch["type"] == "array" and resolve(doc, batch["items"]) == create
    assert "Backoff" in doc["components"]["schemas"]  # a nested model, collected into components


def test_bodies_accept_what_the_server_accepts(doc: Doc) -> None:
    """Durations as text or seconds and times as RFC 3339 text, not the milliseconds they become."""
    conforms(doc, "QueueSettings", {"timeout": "1h15m5s", "expires_after": 30, "retry_delays": ["1s", 2.5],
                                    "retry_backoff": {"base": "1s", "factor": 2}})  # fmt: skip
    conforms(doc, "JobOptions", {"input": {"a": [1]}, "run_at": "2026-11-20T18:52:42Z", "tags": ["x"]})
    conforms(doc, "JobUpdate", {"status": "failed", "error": "boom"})
    conforms(doc, "JobUpdate", {"status": "failed", "error": {"kind": "network", "message": "down"}})


def test_query_parameters_and_error_answers(doc: Doc) -> None:
    def query(method: str, path: str) -> set[str]:
        return {p["name"] for p in doc["paths"][path][method]["parameters"] if p["in"] == "query"}

    assert query("get", "/events") == {"after", "limit", "type", "queue", "job", "actor", "operation"}
    assert query("get", "/events/stream") == {"after", "type", "queue", "job", "actor", "operation"}
    assert query("get", "/queue/{queue}/job") == {"count", "worker", "wait", "fields"}
    assert query("get", "/queue/{queue}/jobs") == {
        "status",
        "tag",
        "limit",
        "cursor",
        "search",
        "since",
        "until",
    }
    assert query("post", "/bulk") == {"wait"}
    assert query("get", "/job/{job_id}") == {"fields"}
    assert query("patch", "/job/{job_id}") == {"attempt"}
    responses = doc["paths"]["/job/{job_id}"]["patch"]["responses"]
    assert set(responses) == {"204", "400", "404", "409", "413", "415", "503"}
    assert resolve(doc, responses["409"]["content"]["application/json"]["schema"])["required"] == ["error"]
    assert "503" not in doc["paths"]["/health"]["get"]["responses"]


def test_answers_match_their_schemas(api: TestClient, doc: Doc) -> None:
    put_queue(api, timeout="90s", retry_backoff={"base": "1s"})
    job_id = create_job(api, input={"n": 1}, tags=["t"])
    conforms(doc, "Fetched", fetch(api))
    conforms(doc, "QueueSettings", api.get("/queue/q").json())
    conforms(doc, "Job", api.get(f"/job/{job_id}").json())
    conforms(doc, "JobIds", api.get("/queue/q/job_ids").json())
    conforms(doc, "JobPage", api.get("/queue/q/jobs").json())
    conforms(doc, "EventPage", api.get("/events").json())
    conforms(doc, "Info", api.get("/info").json())
    conforms(doc, "Health", api.get("/health").json())
    conforms(doc, "Error", api.get("/job/999999").json())


def test_the_idempotent_routes_and_only_they_take_an_idempotency_key(doc: Doc) -> None:
    for route in ROUTES:
        operation = doc["paths"][openapi_path(route.path)][route.method.lower()]
        headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
        assert ("Idempotency-Key" in headers) == route.idempotent, route.name
        assert ("422" in operation["responses"]) == route.idempotent, route.name
    assert "Idempotency-Key" in {p["name"] for p in doc["paths"]["/upload"]["post"]["parameters"]}


def test_with_auth_the_guarded_routes_want_the_bearer_token(redis_url: str, namespace: str) -> None:
    app = create_app(make_config(namespace, auth=True), redis_url, run_scheduler=False)
    admin = new_secret()
    with TestClient(app, base_url=BASE_URL) as client:
        Ledger(redis.Redis.from_url(redis_url), namespace).run(create_token("doc", ["admin"], digest(admin)))
        response = client.get("/openapi.json", headers={"authorization": f"Bearer {admin}"})
    assert response.status_code == 200
    doc = response.json()
    validate(doc)
    scheme = doc["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert doc["security"] == [{"bearer": []}]
    for route in ROUTES:
        method, path, needs = route.method, route.path, route.needs
        operation = doc["paths"][openapi_path(path)][method.lower()]
        if needs.kind == "open":
            assert operation["security"] == [], path
            assert not {"401", "403"} & set(operation["responses"]), path
        else:
            assert operation["security"] == [{"bearer": []}], path
            assert {"401", "403"} <= set(operation["responses"]), path
            assert operation["x-jobledger-scope"] == needs.describe()
    assert doc["paths"]["/queue/{queue}"]["put"]["x-jobledger-scope"] == "admin"


def test_without_auth_nothing_wants_a_token(doc: Doc) -> None:
    assert "bearer" in doc["components"]["securitySchemes"]  # described, required nowhere
    assert "security" not in doc
    for item in doc["paths"].values():
        for operation in item.values():
            assert "security" not in operation
            assert not {"401", "403"} & set(operation["responses"])
