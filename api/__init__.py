"""The Starlette application and its HTTP handlers, the Python client, the command line."""

from importlib import metadata


def _version() -> str:
    """The installed distribution's version; the source tree's when not installed."""
    try:
        return metadata.version("jobledger")
    except metadata.PackageNotFoundError:
        return "0.1.0"


__version__ = _version()
