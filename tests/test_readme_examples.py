"""The documentation cannot rot: the producer and worker examples (marked ``<!-- example: NAME -->`` in
README.md or docs/*.md) run exactly as written against a real server, the worker as a script in a
subprocess, the producer as another, ``$JOBLEDGER_URL`` pointing both at the test server; and every
relative link of README.md and docs/*.md points at a file, and a heading, that exist."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = re.compile(r"<!-- example: (\w+) -->\s*```python\n(.*?)```", re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)


def documents() -> list[Path]:
    """README.md and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def examples() -> dict[str, str]:
    """The code blocks marked ``<!-- example: NAME -->`` in the documents, by name (each name once)."""
    found: dict[str, str] = {}
    for doc in documents():
        for name, code in EXAMPLE.findall(doc.read_text()):
            assert name not in found, f"example {name!r} appears twice ({doc.name})"
            found[name] = code
    return found


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown page's headings: lower case, punctuation dropped, spaces
    as hyphens, a repeated one suffixed ``-1``, ``-2``..."""
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCED.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def test_every_relative_link_resolves() -> None:
    broken = []
    for doc in documents():
        text = doc.read_text()
        for target in LINK.findall(FENCED.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            page = (doc.parent / path).resolve() if path else doc
            if not page.exists():
                broken.append(f"{doc.name}: {target} (no such file)")
            elif anchor and page.suffix == ".md" and anchor not in anchors(page.read_text()):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert not broken, broken
    assert "](docs/" in (REPO / "README.md").read_text()


def test_the_readme_has_both_examples() -> None:
    found = examples()
    assert set(found) == {"producer", "worker"}
    assert "Client()" in found["producer"] and "Worker(" in found["worker"]


def test_the_producer_and_worker_examples_run_as_written(server: str, tmp_path: Path) -> None:
    code = examples()
    for name, text in code.items():
        (tmp_path / f"{name}.py").write_text(text)
    env = {**os.environ, "JOBLEDGER_URL": server, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, tmp_path / "worker.py"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as worker:
        try:
            producer = subprocess.run(
                [sys.executable, tmp_path / "producer.py"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert producer.returncode == 0, producer.stderr
            assert producer.stdout == "completed {'sent': True}\n"
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=30)
        finally:
            worker.kill()
    assert worker.returncode == 0, err
    assert out == "sending to ada@example.com\n"
