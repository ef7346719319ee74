"""Where a file the server names lands on this machine: in the directory it was meant for, or nowhere.

A name comes from the server (a job's file, a result in a manifest), and a client trusts no server
to keep it out of the rest of the disk: a name that is not one plain path segment (``../x``, an
absolute path, a ``/`` or ``\\``, a control character) or whose path resolves outside the directory
(through a symlink already there) is refused with :class:`UnsafeName`, before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from jobledger.client.errors import ClientError
from jobledger.contract.files import file_name_problem


class UnsafeName(ClientError):
    """The server named a file that would land outside the directory it is meant for."""


def inside(directory: Path, name: object) -> Path:
    """The path of the file ``name`` in ``directory``; :class:`UnsafeName` when it would be elsewhere."""
    if not isinstance(name, str):
        raise UnsafeName(f"the server named a file {name!r}, which is not a name")
    problem = file_name_problem(name)
    if problem:
        raise UnsafeName(f"refusing the file name {name[:300]!r} from the server: {problem}")
    path = directory / name
    if path.resolve().parent != directory.resolve():
        raise UnsafeName(f"refusing the file name {name!r} from the server: it leads out of {directory}")
    return path
