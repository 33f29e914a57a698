"""The dashboard in a real browser shows what just happened: Debian's headless Chromium
reloads the page after judgments and an override arrive through the webhook endpoint.
Skipped, saying why, where Playwright or Chromium is missing (as in test_browser.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.github.client import GitHubApp
from tests.dashboard.live_support import MAINTAINER, judging_app, three_judgments_and_an_override
from tests.dashboard.support import TOKEN
from tests.dashboard.test_browser import CHROMIUM, browser, number  # noqa: F401 (a fixture)
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer

if TYPE_CHECKING:
    from playwright.async_api import Browser

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium): browser tests skipped"
)


async def test_a_reload_shows_the_judgments_just_made(
    browser: Browser,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> None:
    async with judging_app(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm
    ) as bot:
        context = await browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        page = await context.new_page()
        await page.goto(str(bot.client.make_url("/dashboard")))
        assert await number(page, "judgments") == 0
        await three_judgments_and_an_override(bot)
        await page.reload()
        assert await number(page, "judgments") == 3
        assert await number(page, "count-reject") == 2
        assert await number(page, "flagged-count") == 2
        overrides = await page.locator("#flagged tr.flagged-item").all_inner_texts()
        assert sum(f"accept by @{MAINTAINER}" in row for row in overrides) == 1
        freshness = await page.locator("#freshness").inner_text()
        assert freshness.startswith("Up to date with the verdict log at ")
        assert "read again every 30 seconds" in freshness
        await context.close()
