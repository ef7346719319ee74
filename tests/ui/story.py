"""What the browser tests look at, made through the served app's HTTP API as a producer and a worker
would make it: queues, jobs in every state, a launcher that fired."""

from __future__ import annotations

import time
from typing import Any

import httpx2

from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import check

TRACEBACK = (
    'Traceback (most recent call last):\n  File "send.py", line 12, in send\nConnectionError: mx down\n'
)


def queue(api: httpx2.Client, name: str, **settings: Any) -> None:
    assert api.put(f"/queue/{name}", json=settings).status_code in (200, 201)


def create(api: httpx2.Client, name: str, **body: Any) -> int:
    response = api.post(f"/queue/{name}/job", json=body)
    assert response.status_code == 201, response.text
    return int(response.json())


def start(api: httpx2.Client, name: str, job: int) -> None:
    """Fetch the next job of ``name``: it must be ``job``."""
    fetched = api.get(f"/queue/{name}/job")
    assert fetched.status_code == 200 and fetched.json()["id"] == job, fetched.text


def end(api: httpx2.Client, job: int, status: str, **fields: Any) -> None:
    response = api.patch(f"/job/{job}", json={"status": status, **fields})
    assert response.status_code == 204, response.text


def failed(api: httpx2.Client, name: str, message: str = "mx down", **body: Any) -> int:
    """A job that ran and failed with an error and its traceback; its id."""
    job = create(api, name, **body)
    start(api, name, job)
    end(api, job, "failed", error={"message": message, "traceback": TRACEBACK})
    return job


def completed(api: httpx2.Client, name: str, output: Any = None, **body: Any) -> int:
    job = create(api, name, **body)
    start(api, name, job)
    end(api, job, "completed", **({"output": output} if output is not None else {}))
    return job


def timed_out(api: httpx2.Client, ledger: Ledger, name: str) -> int:
    """A job that ran past its one-second timeout, ended by the scheduler; its id."""
    job = create(api, name, timeout="1s")
    start(api, name, job)
    time.sleep(1.05)
    while job not in [int(j) for j in check(ledger, "timeouts")]:
        time.sleep(0.05)
    assert status(api, job) == "timed_out"
    return job


def status(api: httpx2.Client, job: int) -> str:
    return str(api.get(f"/job/{job}").json()["status"])


def history(api: httpx2.Client, job: int) -> list[dict[str, Any]]:
    response = api.get(f"/job/{job}/history")
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()
    return events


def event_count(ledger: Ledger) -> int:
    return int(ledger.client.xlen(ledger.keys.events))
