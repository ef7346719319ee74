"""A real browser for the dashboard's tests: Debian's chromium driven by Playwright's sync API.

One chromium per test process, lent to one test at a time.  Playwright's sync API marks its own event
loop as the thread's running loop between calls, which would stop every later ``asyncio.run`` in the
same process (the other tests of an xdist worker): the loop is handed back while no test holds it.

Without playwright or chromium the tests skip, saying which is missing; ``REQUIRE_BROWSER=1`` (set by
CI once it has installed chromium) turns that into a failure.  Every page a test opens is saved as a
PNG in ``JOBLEDGER_SCREENSHOTS`` (default: a folder under pytest's temporary directory).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Locator, LocatorAssertions, Page, ViewportSize

#: No name resolves to anything but this machine: the pages must never reach outside.
LOCAL_ONLY = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
#: How long a step waits for the page (a live update included) before the test fails.
WAIT_MS = 10_000


def chromium_path() -> str | None:
    """``JOBLEDGER_CHROMIUM``, else ``chromium`` on PATH, else Debian's /usr/bin/chromium."""
    given = os.environ.get("JOBLEDGER_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def missing() -> str | None:
    """What keeps the browser tests from running here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "the python package playwright is not installed (pip install '.[test]')"
    given = os.environ.get("JOBLEDGER_CHROMIUM")
    if given and chromium_path() is None:
        return f"JOBLEDGER_CHROMIUM={given} is not an executable file"
    if chromium_path() is None:
        return "no chromium on PATH or at /usr/bin/chromium (apt-get install chromium)"
    return None


def unavailable(reason: str) -> None:
    """Skip, or fail when the run says a browser is required."""
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(f"REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def expect(locator: Locator) -> LocatorAssertions:
    """Playwright's ``expect``, imported when first used, so the tests' modules import without it."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


class Chromium:
    """One headless chromium, lent to a test at a time with :meth:`lend`."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        try:
            self.browser = self._playwright.chromium.launch(
                executable_path=chromium_path(), headless=True, args=[LOCAL_ONLY]
            )
        except Exception:
            self._playwright.stop()
            raise
        self._loop = asyncio._get_running_loop()
        asyncio._set_running_loop(None)

    @contextmanager
    def lend(self) -> Iterator[Browser]:
        """The browser, its loop marked running for the test's length, then handed back."""
        asyncio._set_running_loop(self._loop)
        try:
            yield self.browser
        finally:
            asyncio._set_running_loop(None)

    def close(self) -> None:
        asyncio._set_running_loop(self._loop)
        try:
            self.browser.close()
        finally:
            self._playwright.stop()
            asyncio._set_running_loop(None)


def screenshot_dir(default: Path) -> Path:
    folder = Path(os.environ.get("JOBLEDGER_SCREENSHOTS") or default)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Dashboard:
    """A browser tab on a served app: opens pages under it, saves a screenshot of each, and keeps the
    scripts' errors (an uncaught exception, a Content-Security-Policy refusal) for the test's end."""

    page: Page
    base: str
    shots: Path
    prefix: str
    taken: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.page.set_default_timeout(WAIT_MS)
        self.page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))
        self.page.on("console", self._console)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            self.errors.append(f"refused by CSP: {message.text}")

    def url(self, path: str) -> str:
        return self.base + path

    def open(self, path: str, label: str | None = None) -> Page:
        """Go to ``path`` (under the server), wait for it to load, save a screenshot."""
        self.page.goto(self.url(path))
        self.shot(label or path)
        return self.page

    def shot(self, label: str) -> Path:
        """Save the tab as it is now, the whole page."""
        slug = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-") or "root"
        path = self.shots / f"{self.prefix}-{len(self.taken) + 1:02d}-{slug}.png"
        self.page.screenshot(path=str(path), full_page=True)
        self.taken.append(path)
        return path
