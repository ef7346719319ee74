"""jobledger.runtime.startup: the collector paused while a process starts, and on again after.

Each case runs in a process of its own: freezing this one's objects would hide from the suite's
collections what its tests leave behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> list[str]:
    """The lines ``code`` prints, run by a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.split()


def test_collection_is_paused_until_the_start_is_over() -> None:
    assert run("""
        import gc
        from jobledger.runtime.startup import pause_collection, started
        pause_collection()
        print(gc.isenabled())
        started()
        print(gc.isenabled(), gc.get_freeze_count() > 0)
        gc.unfreeze()
        started()  # once only
        print(gc.isenabled(), gc.get_freeze_count())
    """) == ["False", "True", "True", "True", "0"]


def test_started_without_a_pause_changes_nothing() -> None:
    assert run("""
        import gc
        from jobledger.runtime.startup import started
        started()
        print(gc.isenabled(), gc.get_freeze_count())
    """) == ["True", "0"]


def test_a_command_runs_with_the_collector_on() -> None:
    assert run("""
        import gc, sys
        from jobledger.cli.main import main
        sys.argv = ["jobledger", "version"]
        try:
            main()
        except SystemExit:
            pass
        print(gc.isenabled(), gc.get_freeze_count() > 0)
    """)[-2:] == ["True", "True"]
