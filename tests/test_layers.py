"""The import graph: every import points down the layers, and no modules import each other in a circle.

The layers, bottom up: the contract (what the client and the server agree on: the rules of files'
names and digests); the ledger (stream, keys, commands, runner); the projections (appliers and
readers); replay, the runtime (configuration, embedded server) and the blob store; the scheduler; then
the server, the client, the worker and the command line.  The client, besides, imports nothing but the
contract: it talks to the server over HTTP only.  Within a layer a package may use another of the same
layer, but never in a circle.  Imports inside functions and under
``TYPE_CHECKING`` count: deferring an import does not change what a module depends on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Where each part of the package lives in the repository.
SOURCES = {"jobledger": REPO / "api", "jobledger.ledger": REPO / "ledger",
           "jobledger.projections": REPO / "projections", "jobledger.replay": REPO / "replay"}  # fmt: skip

LAYERS = {
    "jobledger.contract": 0,
    "jobledger.ledger": 1,
    "jobledger.projections": 2,
    "jobledger.replay": 3,
    "jobledger.runtime": 3,
    "jobledger.blobs": 3,
    "jobledger.scheduler": 4,
    "jobledger.server": 5,
    "jobledger.client": 5,
    "jobledger.worker": 5,
    "jobledger.cli": 5,
}
#: The package's own face (``from jobledger import Client, Worker``) sits above everything.
FACE = "jobledger"


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([package, *parts])
            if package == "jobledger" and len(parts) and parts[0] in ("ledger", "projections", "replay"):
                continue
            found[name] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The project's modules that ``name`` imports, wherever the import statement is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def layer(module: str) -> int:
    for package, level in LAYERS.items():
        if module == package or module.startswith(package + "."):
            return level
    assert module == FACE, f"{module} belongs to no layer: add its package to LAYERS"
    return max(LAYERS.values()) + 1


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: set(imports(name, path, set(found))) for name, path in found.items()}


def test_every_module_belongs_to_a_layer() -> None:
    for name in modules():
        layer(name)


def test_no_import_points_up_a_layer() -> None:
    upward = sorted(
        f"{name} (layer {layer(name)}) imports {target} (layer {layer(target)})"
        for name, targets in graph().items()
        for target in targets
        if layer(target) > layer(name)
    )
    assert upward == []


def test_the_client_imports_only_the_contract() -> None:
    """The HTTP client shares nothing with the server but :mod:`jobledger.contract`: a user's program
    that only calls a server loads none of the ledger, the projections, replay, the runtime, the
    blob store, the scheduler or the server."""
    own = ("jobledger.client", "jobledger.contract")
    outside = sorted(
        f"{name} imports {target}"
        for name, targets in graph().items()
        if name.startswith("jobledger.client")
        for target in targets
        if not target.startswith(own)
    )
    assert outside == []


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    edges = graph()
    # A package's __init__ that re-exports its modules is not a circle with them.
    for name in edges:
        edges[name] = {t for t in edges[name] if not (name.startswith(t + ".") and t != name)}
    assert _circles(edges) == []


def test_no_package_imports_another_in_a_circle() -> None:
    def package(module: str) -> str:
        for name in sorted(LAYERS, key=len, reverse=True):
            if module == name or module.startswith(name + "."):
                return name
        return FACE

    edges: dict[str, set[str]] = {}
    for name, targets in graph().items():
        edges.setdefault(package(name), set()).update(
            package(t) for t in targets if package(t) != package(name)
        )
    assert _circles(edges) == []


def test_the_product_never_imports_the_tests() -> None:
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tests":
                raise AssertionError(f"{name} imports {node.module}")
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] != "tests" for a in node.names), name
