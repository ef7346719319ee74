"""The installed distribution's version (the source tree's when not installed)."""

from importlib import metadata


def _version() -> str:
    try:
        return metadata.version("jobledger")
    except metadata.PackageNotFoundError:
        return "0.1.0"


__version__ = _version()
