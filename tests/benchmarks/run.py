"""One benchmark run: the parts of ours and the peers chosen, measured in turn, with the facts of the
machine they ran on.

Parts of ours: ``process`` (lifecycle throughput, server CPU and commands per job), ``enqueue``
(bulk, one by one, latency), ``http``, ``memory``, ``scheduler``, ``quotas``, ``replay``.  ``raw``:
the raw server's EVALSHA rate (:mod:`tests.benchmarks.calibration`).  Peers: ``dramatiq``,
``saq``, ``bullmq``.  ``ours`` and ``peers`` name each group whole.  A part that fails
is recorded (and makes the run fail); a peer that cannot run here is recorded with the reason.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
import os
import platform
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import calibration, ours_client, ours_http, ours_process, ours_scale
from .figures import CALIBRATION, PEER_NAMES, Results, Settings
from .figures import OURS_PARTS as OURS
from .server import Servers, describe

ROOT = Path(__file__).resolve().parents[2]
Log = Callable[[str], None]


def parts(only: str | None) -> set[str]:
    """The parts a ``--only`` value names (all when None)."""
    if not only:
        return {*OURS, CALIBRATION, *PEER_NAMES}
    chosen: set[str] = set()
    for name in (n.strip() for n in only.split(",") if n.strip()):
        if name == "ours":
            chosen |= set(OURS)
        elif name == "peers":
            chosen |= set(PEER_NAMES)
        elif name in OURS or name in PEER_NAMES or name == CALIBRATION:
            chosen.add(name)
        else:
            known = ", ".join((*OURS, CALIBRATION, *PEER_NAMES))
            raise ValueError(f"unknown part {name!r}: choose from ours, peers, {known}")
    return chosen


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = int(Path("/proc/meminfo").read_text().split()[1]) / 1024**2
    except OSError:
        mem = 0.0
    system = f"{platform.system()} {platform.release()}, Python {platform.python_version()}"
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {system}"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def _revision_outside_git() -> str:
    """``JOBLEDGER_BENCH_REVISION``, else the installed jobledger's version."""
    if os.environ.get("JOBLEDGER_BENCH_REVISION"):
        return os.environ["JOBLEDGER_BENCH_REVISION"]
    try:
        return "jobledger " + importlib.metadata.version("jobledger")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def revision() -> str:
    """The git commit measured; outside a git checkout ``JOBLEDGER_BENCH_REVISION``, else the
    installed jobledger's version (always, when this runs as the installed ``jobledger_bench``)."""
    if __package__ != "tests.benchmarks":
        return _revision_outside_git()
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True)  # fmt: skip
    except OSError:
        head = None
    if head is None or head.returncode != 0:
        return _revision_outside_git()
    return head.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")


def _ours(servers: Servers, settings: Settings, chosen: set[str], log: Log) -> tuple[Results, dict[str, str]]:
    results: Results = {}
    errors: dict[str, str] = {}
    steps: list[tuple[str, Callable[[], Results]]] = [
        ("process", lambda: ours_process.measure(servers, settings, log)),
        ("enqueue", lambda: ours_client.measure(servers, settings, log)),
        ("http", lambda: ours_http.measure(servers, settings, log)),
    ]
    steps += [(name, functools.partial(ours_scale.measure, servers, settings, {name}, log))
              for name in ("memory", "scheduler", "quotas", "replay")]  # fmt: skip
    for name, step in steps:
        if name not in chosen:
            continue
        log(f"ours: {name} (load {load()})")
        try:
            results.update(step())
        except Exception as exc:  # noqa: BLE001 - a failed part is reported; the others still run
            errors[f"ours {name}"] = f"{type(exc).__name__}: {exc}"
            log(traceback.format_exc())
    return results, errors


def _peers(
    servers: Servers, settings: Settings, chosen: set[str], log: Log
) -> tuple[dict[str, Results], dict[str, str]]:
    from .peers import PEERS

    systems: dict[str, Results] = {}
    missing: dict[str, str] = {}
    for name in PEER_NAMES:
        if name not in chosen:
            continue
        if not servers.isolated:
            missing[name] = "peers run only on fresh bundled servers (no --redis-url)"
            continue
        reason = PEERS[name].unavailable()
        if reason:
            missing[name] = reason
            continue
        log(f"{name} (load {load()})")
        try:
            systems[name] = PEERS[name].measure(servers, settings, log)
        except Exception as exc:  # noqa: BLE001 - a peer that breaks is reported, not fatal
            missing[name] = f"failed: {type(exc).__name__}: {exc}"
            log(traceback.format_exc())
    return systems, missing


def run(servers: Servers, settings: Settings, chosen: set[str], command: str, log: Log) -> dict[str, Any]:
    """Measure the chosen parts; the run as a dict (``meta``, ``systems``, ``unavailable``, ``errors``)."""
    with servers.fresh() as url:
        server = describe(url)
    meta = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(), "server": server, "jobs": settings.jobs, "quick": settings.quick,
        "command": command, "revision": revision(), "load_before": load(),
        "node": _node_version(),
    }  # fmt: skip
    if CALIBRATION in chosen:
        log(f"raw server (load {load()})")
        meta["raw_server"] = calibration.raw_server(servers, settings.quick)
    ours, errors = _ours(servers, settings, chosen, log)
    peers, missing = _peers(servers, settings, chosen, log)
    meta["load_after"] = load()
    return {"meta": meta, "systems": {"ours": ours, **peers}, "unavailable": missing, "errors": errors}


def _node_version() -> str | None:
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip() or None
    except OSError:
        return None


def stderr_log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
