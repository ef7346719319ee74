"""The browser the dashboard's tests drive: it reaches the served app and nothing outside this
machine, and lending it to a test leaves asyncio usable for the tests that follow in the process."""

from __future__ import annotations

import asyncio

import pytest

from tests.ui.browser import Chromium
from tests.ui.conftest import OpenTab


def test_the_browser_reaches_the_served_app(server: str, tab: OpenTab) -> None:
    page = tab(server).open("/health")
    assert "healthy" in (page.text_content("body") or "")


def test_no_name_resolves_outside_this_machine(server: str, tab: OpenTab) -> None:
    from playwright.sync_api import Error

    page = tab(server).page
    with pytest.raises(Error, match="ERR_NAME_NOT_RESOLVED"):
        page.goto("http://example.com/")


def test_asyncio_runs_again_once_the_browser_is_handed_back(chromium: Chromium) -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    with chromium.lend() as browser:
        context = browser.new_context()
        context.new_page().set_content("<p>here</p>")
        context.close()
        refused = answer()
        with pytest.raises(RuntimeError, match="running event loop"):
            asyncio.run(refused)
        refused.close()
    assert asyncio.run(answer()) == 42
