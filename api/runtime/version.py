"""The installed distribution's version (the source tree's when not installed), read on first use:
finding it walks the installed distributions, which a server starting has no need to wait for."""

from functools import cache
from typing import Any


@cache
def version() -> str:
    from importlib import metadata

    try:
        return metadata.version("jobledger")
    except metadata.PackageNotFoundError:
        return "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'jobledger.runtime.version' has no attribute {name!r}")
