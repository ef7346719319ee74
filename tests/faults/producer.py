"""A producer of the fault suite, run as its own process (``python -m tests.faults.producer``):
creates jobs at a steady rate with an ``Idempotency-Key`` per logical create, and resends a create
with the same key after a lost connection, a timeout or a 503, until it is answered or
:data:`GIVE_UP` seconds have passed.  One JSON line per logical create goes to the output file:
``{"key", "id", "tries", "status"}`` (``id`` null when never acknowledged).  SIGTERM ends it
after the create under way.

The header is sent here with httpx2 rather than by the Python client, so that the suite measures
the server whether or not the client sends the key by itself."""

from __future__ import annotations

import argparse
import json
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import httpx2

#: Seconds a logical create is resent for before the producer gives it up (recorded, not acked).
GIVE_UP = 30.0
#: Seconds one request may take.
REQUEST_TIMEOUT = 5.0


def create(http: httpx2.Client, queue: str, key: str, stopping: list[bool]) -> dict[str, Any]:
    """One logical create, resent with the same key until answered; its record."""
    body = {"input": {"key": key}}
    tries, deadline, pause = 0, time.monotonic() + GIVE_UP, 0.05
    status: int | str = "unanswered"
    while time.monotonic() < deadline:
        tries += 1
        try:
            response = http.post(f"/queue/{queue}/job", json=body, headers={"Idempotency-Key": key})
        except httpx2.TransportError as exc:
            status = type(exc).__name__
        else:
            status = response.status_code
            if response.is_success:
                return {"key": key, "id": int(response.json()), "tries": tries, "status": status}
            if status != 503:
                return {"key": key, "id": None, "tries": tries, "status": status}
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
    return {"key": key, "id": None, "tries": tries, "status": status}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rate", type=float, default=10.0, help="creates per second")
    args = parser.parse_args()

    stopping = [False]
    signal.signal(signal.SIGTERM, lambda *_: stopping.__setitem__(0, True))
    every = 1.0 / args.rate
    with httpx2.Client(base_url=args.url, timeout=REQUEST_TIMEOUT) as http, args.out.open("a") as out:
        n = 0
        while not stopping[0]:
            started = time.monotonic()
            key = f"{args.name}-{n}-{uuid.uuid4().hex[:12]}"
            out.write(json.dumps(create(http, args.queue, key, stopping)) + "\n")
            out.flush()
            n += 1
            time.sleep(max(0.0, every - (time.monotonic() - started)))


if __name__ == "__main__":
    main()
