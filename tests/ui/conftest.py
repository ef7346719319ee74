"""Fixtures of the browser tests: the app served on the test's namespace (auth off, and on with
tokens), one chromium per test process, and tabs on the served app that save a screenshot of every
page they open."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2
import pytest

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from tests.support.live_server import live_server
from tests.ui.browser import VIEWPORT, Chromium, Dashboard, missing, screenshot_dir, unavailable

if TYPE_CHECKING:  # playwright is imported only once a browser is there
    from playwright.sync_api import Browser


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    reason = missing()
    if reason:
        unavailable(reason)
    browser = Chromium()
    yield browser
    browser.close()


@pytest.fixture
def browser(chromium: Chromium) -> Iterator[Browser]:
    with chromium.lend() as lent:
        yield lent


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_dir(tmp_path_factory.getbasetemp() / "screenshots")


def _server_kind() -> str:
    return "redis" if os.environ.get("JOBLEDGER_TEST_REDIS_URL") else "valkey"


OpenTab = Callable[..., Dashboard]


@pytest.fixture
def tab(browser: Browser, shots: Path, request: pytest.FixtureRequest) -> Iterator[OpenTab]:
    """Open a tab (a browser context of its own: its own cookies) on a served app's base URL.  At the
    end, every tab's scripts must have run without an uncaught error or a CSP refusal."""
    opened: list[Dashboard] = []

    def open_tab(base: str, name: str = "") -> Dashboard:
        context = browser.new_context(viewport=VIEWPORT)
        prefix = f"{_server_kind()}-{request.node.name}" + (f"-{name}" if name else "")
        dashboard = Dashboard(context.new_page(), base, shots, prefix)
        opened.append(dashboard)
        return dashboard

    yield open_tab
    errors = [e for d in opened for e in d.errors]
    for d in opened:
        d.page.context.close()
    assert not errors, errors


@pytest.fixture
def auth_server(redis_url: str, namespace: str) -> Iterator[str]:
    """The URL of a server on the test's namespace with auth on (tokens: :func:`token`)."""
    with live_server(redis_url, namespace, auth=True) as url:
        yield url


Token = Callable[..., str]


@pytest.fixture
def token(ledger: Ledger) -> Token:
    """``token(name, *scopes)``: a new token in the ledger; its secret."""

    def make(name: str, *scopes: str) -> str:
        secret = new_secret()
        ledger.run(create_token(name, list(scopes), digest(secret)))
        return secret

    return make


def api(base: str, secret: str | None = None) -> httpx2.Client:
    """A client of the served app's HTTP API (with a bearer token when given)."""
    headers = {"authorization": f"Bearer {secret}"} if secret else {}
    return httpx2.Client(base_url=base, headers=headers, timeout=10)
