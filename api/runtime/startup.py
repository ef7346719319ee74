"""The cyclic garbage collector during a process's start.

A start imports hundreds of modules and builds the pydantic models, the routes and the scripts'
library: objects that live as long as the process, which each collection pass would walk again and
free none of.  The ``jobledger`` command pauses collection from its first line
(:func:`pause_collection`) until the command it runs has built what it keeps (:func:`started`),
then moves everything built so far out of the collector's sight (``gc.freeze``) and resumes it.
What the start left as garbage in reference cycles stays with it, once; nothing else changes.
Code that was not started through :func:`pause_collection` (a test calling a command in its own
process) finds :func:`started` a no-op."""

from __future__ import annotations

import gc

_paused = False


def pause_collection() -> None:
    """Collect no garbage until :func:`started`."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def started() -> None:
    """The start is over: what it built is frozen out of collections, which resume.  Only after
    :func:`pause_collection`, and once."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
