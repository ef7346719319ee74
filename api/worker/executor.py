"""The orchestrator's executor: a handler that runs a command in the job's directory.

``Worker(Executor("bash run.sh"), queues, upload_written=True)`` is what ``jobledger worker --exec``
runs.  For each job the command (split as a shell would, run without one) starts in the job's
directory (:attr:`jobledger.worker.jobs.JobContext.dir`, its input files already there) in a
process group (a session) of its own.  The command is untrusted code: its environment is built
from an allow-list (:data:`PASSED`, ``LC_*``, the names given as ``env``, and ``JOBLEDGER_JOB_ID``,
``JOBLEDGER_JOB_ATTEMPT``, ``JOBLEDGER_QUEUE``, ``JOBLEDGER_JOB_INPUT``, the input as JSON), never
the worker's own (its token, Redis URL, cloud keys); with ``user`` it runs as that user (the job's
directory handed to it).  Its stdout and stderr go to a log file beside the directory
(``<dir>.log``, 0600: not a result).  The worker heartbeats while it runs.

As soon as the command exits, whatever it left running in its process group is killed (SIGKILL),
before the files it wrote are read.  It ends one of four ways.  Exit 0: the job completes with
output ``{"exit_code": 0, "output_tail": ...}`` once the files it wrote are uploaded.  Exit N: the
job fails with kind ``exit:N``, its message the last line of output and its traceback the output's
last 8 KiB.  The job's timeout passed: the process group is killed and the job fails with kind
``timeout``.  The attempt ended elsewhere (cancelled, timed out by the scheduler, deleted) or the
worker hands the job back: the process group is killed (SIGTERM, then SIGKILL after
:data:`KILL_GRACE` seconds).  On Linux the command is also killed should the worker itself die
(``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import json
import os
import pwd
import shlex
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from jobledger.ledger.requests import MAX_TRACEBACK
from jobledger.worker.jobs import JobContext
from jobledger.worker.transports import tail

DEFAULT_COMMAND = "bash run.sh"
#: Seconds between SIGTERM and SIGKILL to the command's process group.
KILL_GRACE = 2.0
#: How much of the output the completed job's output keeps.
OUTPUT_TAIL = 2048
#: What the command's environment takes from the worker's, besides ``LC_*`` and the names given.
PASSED = ("PATH", "HOME", "LANG", "TMPDIR")


class CommandFailed(Exception):
    """The command exited with a code other than 0, or ran past the job's timeout."""

    def __init__(self, kind: str, message: str, details: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.details = details


@dataclass(frozen=True)
class RunAs:
    """The user the command runs as: ids, supplementary groups and home."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    @classmethod
    def named(cls, name: str) -> RunAs:
        """The user ``name``; ValueError when there is none, or the worker may not become it."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise ValueError(f"there is no user {name!r} on this machine") from None
        if os.geteuid() != 0 and entry.pw_uid != os.geteuid():
            raise ValueError(f"only a worker running as root may run the command as {name!r}")
        groups = tuple(os.getgrouplist(name, entry.pw_gid))
        return cls(name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)

    def owns(self, top: Path) -> None:
        """Hand ``top`` and everything in it to the user."""
        os.chown(top, self.uid, self.gid, follow_symlinks=False)
        for root, dirs, files in os.walk(top):
            for name in (*dirs, *files):
                os.chown(Path(root, name), self.uid, self.gid, follow_symlinks=False)


class Executor:
    """Runs ``command`` for each job (see the module's docstring).  ``keep``: leave the log behind;
    ``env``: names of the worker's environment the command gets too; ``user``: run it as this user."""

    def __init__(
        self,
        command: str = DEFAULT_COMMAND,
        keep: bool = False,
        env: Iterable[str] = (),
        user: str | None = None,
    ) -> None:
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("the command to run is empty")
        self.keep = keep
        self.env_names = frozenset(env)
        self.user = RunAs.named(user) if user is not None else None

    def __repr__(self) -> str:
        return f"Executor({shlex.join(self.argv)!r})"

    async def __call__(self, job: JobContext) -> dict[str, Any]:
        timeout = await job.timeout()
        log_path = job.dir.with_name(job.dir.name + ".log")
        if self.user is not None:
            self.user.owns(job.dir)
        try:
            with _private_log(log_path) as log:
                process = await asyncio.create_subprocess_exec(
                    *self.argv, cwd=job.dir, env=self._environment(job), stdin=asyncio.subprocess.DEVNULL,
                    stdout=log, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
                    preexec_fn=functools.partial(_in_child, self.user),
                )  # fmt: skip
            code = await _run(process, timeout)
            output = _tail_of(log_path, MAX_TRACEBACK)
        finally:
            if not self.keep:
                log_path.unlink(missing_ok=True)
        if code is None:
            message = f"{shlex.join(self.argv)} ran past the job's timeout of {timeout:g}s and was killed"
            raise CommandFailed("timeout", message, output)
        if code != 0:
            last = output.strip().splitlines()[-1:] or [""]
            raise CommandFailed(
                f"exit:{code}", f"{shlex.join(self.argv)} exited with {code}: {last[0]}", output
            )
        return {"exit_code": 0, "output_tail": tail(output, OUTPUT_TAIL)}

    def _environment(self, job: JobContext) -> dict[str, str]:
        """The command's environment: the allow-list's part of the worker's, and the job's variables."""
        env = {
            name: value
            for name, value in os.environ.items()
            if name in PASSED or name.startswith("LC_") or name in self.env_names
        }
        env.setdefault("PATH", os.defpath)
        if self.user is not None:
            env["HOME"] = self.user.home
        return {
            **env,
            "JOBLEDGER_JOB_ID": str(job.id),
            "JOBLEDGER_JOB_ATTEMPT": str(job.attempt),
            "JOBLEDGER_QUEUE": job.queue,
            "JOBLEDGER_JOB_INPUT": json.dumps(job.input),
        }


@contextlib.contextmanager
def _private_log(path: Path) -> Iterator[BinaryIO]:
    """``path`` opened to write, new or emptied, 0600, never through a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o600), "wb") as log:
        os.fchmod(log.fileno(), 0o600)
        yield log


async def _run(process: asyncio.subprocess.Process, timeout: float) -> int | None:
    """The command's exit code, or None when it ran past ``timeout`` seconds (0: none) and was
    killed; killed too when the waiting is cancelled."""
    try:
        async with asyncio.timeout(timeout or None):
            code = await process.wait()
        _signal_group(process.pid, signal.SIGKILL)  # what it left behind, before its files are read
        return code
    except TimeoutError:
        await kill_group(process)
        return None
    except BaseException:
        await asyncio.shield(kill_group(process))
        raise


async def kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM to the process's group, SIGKILL after :data:`KILL_GRACE` seconds if it still runs."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        async with asyncio.timeout(KILL_GRACE):
            await process.wait()
    except TimeoutError:
        pass
    _signal_group(process.pid, signal.SIGKILL)  # whatever else of the group is left
    await process.wait()


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _in_child(user: RunAs | None) -> None:
    """In the child, before exec: become ``user`` (the event loop's subprocesses may not take
    ``user=``), then, on Linux, be killed when the worker dies (a change of user clears that)."""
    if user is not None:
        os.setgroups(list(user.groups))
        os.setgid(user.gid)
        os.setuid(user.uid)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _tail_of(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of the file, as text."""
    with path.open("rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - limit))
        return tail(f.read().decode(errors="replace"), limit)
