"""The raw server, measured the way the bars' reference figures were: EVALSHA of ``return 1`` from
50 clients, unpipelined and pipelined 16 deep, with ``valkey-benchmark`` or ``redis-benchmark``.

It says how this machine, at this moment, compares with the reference machine (:data:`REFERENCE`),
so the absolute figures of a run can be read in that light.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from typing import Any
from urllib.parse import urlparse

import redis

from .server import Servers

REFERENCE = {"unpipelined": 80_000, "pipelined_16": 500_000}


def tool() -> str | None:
    return shutil.which("valkey-benchmark") or shutil.which("redis-benchmark")


def _rate(binary: str, url: str, sha: str, requests: int, pipeline: int) -> float:
    where = urlparse(url)
    out = subprocess.run(
        [binary, "-h", where.hostname or "127.0.0.1", "-p", str(where.port or 6379), "-c", "50",
         "-n", str(requests), "-P", str(pipeline), "--csv", "EVALSHA", sha, "0"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    rows = list(csv.reader(io.StringIO(out.stdout.strip())))
    return float(rows[-1][1])


def raw_server(servers: Servers, quick: bool) -> dict[str, Any]:
    """EVALSHA/s unpipelined and pipelined 16 deep, with the reference beside them."""
    binary = tool()
    if binary is None:
        return {"error": "no valkey-benchmark or redis-benchmark on PATH (apt-get install redis-tools)"}
    scale = 10 if quick else 1
    with servers.fresh() as url:
        sha = str(redis.Redis.from_url(url).script_load("return 1"))
        return {
            "tool": binary.rsplit("/", 1)[-1],
            "unpipelined": _rate(binary, url, sha, 200_000 // scale, 1),
            "pipelined_16": _rate(binary, url, sha, 1_000_000 // scale, 16),
            "reference": REFERENCE,
        }


def describe(raw: dict[str, Any] | None) -> str:
    if not raw:
        return "not measured"
    if "error" in raw:
        return str(raw["error"])
    ref = raw["reference"]
    unpipelined = f"{raw['unpipelined']:,.0f} EVALSHA/s from 50 clients unpipelined"
    pipelined = f"{raw['pipelined_16']:,.0f}/s pipelined 16 deep"
    return (
        f"{unpipelined} (reference {ref['unpipelined']:,}), {pipelined} (reference {ref['pipelined_16']:,}); "
        f"{raw['tool']}"
    )
