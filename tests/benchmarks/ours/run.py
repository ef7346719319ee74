"""One benchmark run: the parts of ours and the peers chosen, measured in turn, with the facts of the
machine they ran on.

Parts of ours: ``process`` (lifecycle throughput with the Worker class, server CPU and commands per
job), ``enqueue`` (bulk, one by one, the Worker's latency, an idle Worker's cost), ``http``,
``memory``, ``scheduler``, ``quotas``, ``replay``, ``dashboard`` (the dashboard's page times on a
large ledger and a small one), ``start`` (``serve``'s cold start to ``/ready`` beside a bare
Starlette app's), ``seal`` (what sealing costs: :mod:`tests.benchmarks.ours.ours_seal`), ``cluster``
(a ledger split over a Cluster of three against one node: :mod:`tests.benchmarks.ours.ours_cluster`).
``raw``: the raw server's EVALSHA rate (:mod:`tests.benchmarks.ours.calibration`).  ``ours`` names them whole.
``files`` (a 1 GiB file up and down over HTTP), ``bulk`` (a bulk requeue of 100,000 failed jobs, and
the latency of other requests meanwhile), ``search`` (searching and listing a queue of a million jobs) and
``soak`` (Redis memory under a steady load for several archive rounds) run only when named.
A part that fails is recorded (and makes the run fail).

Peers (other job queues measured beside ours for the same work) are not part of jobledger: a
comparison run hands :func:`run` a mapping of them by name (each a :class:`Peer`), and ``peers``
then names that group whole.  A peer that cannot run here is recorded with the reason.
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
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Protocol

from . import (
    calibration,
    ours_bulk,
    ours_client,
    ours_cluster,
    ours_dashboard,
    ours_files,
    ours_http,
    ours_process,
    ours_scale,
    ours_seal,
    ours_search,
    ours_soak,
    ours_start,
    worker_latency,
)
from .figures import CALIBRATION, NAMED_PARTS, Results, Settings
from .figures import OURS_PARTS as OURS
from .server import Servers, describe

Log = Callable[[str], None]

#: The checkout the benchmark runs from, whose source it measures.
CHECKOUT: Path | None = Path(__file__).resolve().parents[3]


class Peer(Protocol):
    """Another job queue measured beside ours, on fresh servers of its own, for the same work."""

    def unavailable(self) -> str | None:
        """Why it cannot run here, or None."""

    def measure(self, servers: Servers, settings: Settings, log: Log) -> Results:
        """Its figures, under the same keys as ours where it has the thing measured."""


def parts(only: str | None, peers: Collection[str] = ()) -> set[str]:
    """The parts a ``--only`` value names (all when None), ``peers`` being the peers' names."""
    if not only:
        return {*OURS, CALIBRATION, *peers}
    groups = {"ours": set(OURS), **({"peers": set(peers)} if peers else {})}
    chosen: set[str] = set()
    for name in (n.strip() for n in only.split(",") if n.strip()):
        if name in groups:
            chosen |= groups[name]
        elif name in OURS or name in NAMED_PARTS or name in peers or name == CALIBRATION:
            chosen.add(name)
        else:
            known = ", ".join((*groups, *OURS, *NAMED_PARTS, CALIBRATION, *peers))
            raise ValueError(f"unknown part {name!r}: choose from {known}")
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


def revision(checkout: Path | None = CHECKOUT) -> str:
    """The git commit of ``checkout`` (the source measured); without one, or outside git,
    ``JOBLEDGER_BENCH_REVISION``, else the installed jobledger's version."""
    if checkout is None:
        return _revision_outside_git()
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True
        )
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=checkout,
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
        (
            "enqueue",
            lambda: {
                **ours_client.measure(servers, settings, log),
                **worker_latency.figures(servers, settings, log),
            },
        ),
        ("http", lambda: ours_http.measure(servers, settings, log)),
    ]
    steps += [(name, functools.partial(ours_scale.measure, servers, settings, {name}, log))
              for name in ("memory", "scheduler", "quotas", "replay")]  # fmt: skip
    steps.append(("dashboard", lambda: ours_dashboard.measure(servers, settings, log)))
    steps.append(("start", lambda: ours_start.measure(servers, settings, log)))
    steps.append(("cluster", lambda: ours_cluster.measure(servers, settings, log)))
    steps.append(("files", lambda: ours_files.measure(servers, settings, log)))
    steps.append(("bulk", lambda: ours_bulk.measure(servers, settings, log)))
    steps.append(("seal", lambda: ours_seal.measure(servers, settings, log)))
    steps.append(("search", lambda: ours_search.measure(servers, settings, log)))
    steps.append(("soak", lambda: ours_soak.measure(servers, settings, log)))
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
    servers: Servers, settings: Settings, chosen: set[str], log: Log, peers: Mapping[str, Peer]
) -> tuple[dict[str, Results], dict[str, str]]:
    systems: dict[str, Results] = {}
    missing: dict[str, str] = {}
    for name, peer in peers.items():
        if name not in chosen:
            continue
        if not servers.isolated:
            missing[name] = "peers run only on fresh bundled servers (no --redis-url)"
            continue
        reason = peer.unavailable()
        if reason:
            missing[name] = reason
            continue
        log(f"{name} (load {load()})")
        try:
            systems[name] = peer.measure(servers, settings, log)
        except Exception as exc:  # noqa: BLE001 - a peer that breaks is reported, not fatal
            missing[name] = f"failed: {type(exc).__name__}: {exc}"
            log(traceback.format_exc())
    return systems, missing


def run(
    servers: Servers, settings: Settings, chosen: set[str], command: str, log: Log,
    peers: Mapping[str, Peer] | None = None, checkout: Path | None = CHECKOUT,
) -> dict[str, Any]:  # fmt: skip
    """Measure the chosen parts (of ours, and of ``peers``); the run as a dict (``meta``, ``systems``,
    ``unavailable``, ``errors``).  ``checkout``: the source tree whose git commit is the revision."""
    with servers.fresh() as url:
        server = describe(url)
    meta = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(), "server": server, "jobs": settings.jobs, "quick": settings.quick,
        "command": command, "revision": revision(checkout), "load_before": load(),
        "node": _node_version(),
    }  # fmt: skip
    if CALIBRATION in chosen:
        log(f"raw server (load {load()})")
        meta["raw_server"] = calibration.raw_server(servers, settings.quick)
    ours, errors = _ours(servers, settings, chosen, log)
    measured, missing = _peers(servers, settings, chosen, log, peers or {})
    meta["load_after"] = load()
    return {"meta": meta, "systems": {"ours": ours, **measured}, "unavailable": missing, "errors": errors}


def _node_version() -> str | None:
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip() or None
    except OSError:
        return None


def stderr_log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
