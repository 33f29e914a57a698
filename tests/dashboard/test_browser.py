"""The dashboard in a real browser: Debian's headless Chromium driven by Playwright, against
the whole app on loopback with the seeded log. Skipped, saying why, where Playwright or
Chromium is missing (CI installs both: `.ci/run`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.reports import sources
from bot.reports.triage import triage
from bot.storage.base import MergeOptions, NewMergeEntry, Storage
from tests.dashboard.png import coloured_pixels, read_png
from tests.dashboard.support import TOKEN, dashboard_settings, seed, serving
from tests.reports.seeded import NOW

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

CHROMIUM = (
    os.environ.get("JUDGE_TEST_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium): browser tests skipped"
)
MIN_CHART_PIXELS = 2000
"""The seeded week's bars cover several thousand pixels; an unrendered chart has none."""


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("playwright is not installed (it is in the dev extras): browser tests skipped")
    async with async_playwright() as driver:
        launched = await driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()


async def number(page: Page, element_id: str) -> int:
    return int(await page.locator(f"#{element_id}").inner_text())


async def test_the_page_shows_the_reports_numbers_and_draws_the_chart(
    browser: Browser, tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    await seed(sqlite_storage)
    facts, _ = await sources.window_facts(sqlite_storage, NOW - timedelta(days=14))
    report = triage(facts, now=NOW, days=14)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        context = await browser.new_context(
            extra_http_headers={"Authorization": f"Bearer {TOKEN}"},
            viewport={"width": 1280, "height": 900},
        )
        page = await context.new_page()
        response = await page.goto(str(client.make_url("/dashboard")))
        assert response is not None and response.status == 200
        assert await number(page, "judgments") == report.judgments == 9
        for name, count in report.decisions.items():
            assert await number(page, f"count-{name}") == count
        assert await number(page, "flagged-count") == len(report.flagged)
        assert await page.locator("#flagged tr.flagged-item").count() == len(report.flagged)
        links = page.locator("#flagged a")
        assert [await a.get_attribute("href") for a in await links.all()] == [
            f"https://github.com/octo/docs/commit/{'06' * 20}",
            "https://github.com/octo/docs/pull/7",
        ]
        overall = page.locator('#kpis tr[data-scope="overall"]')
        assert await overall.locator(".kpi-go").inner_text() == "55.6% 5/9"
        assert await overall.locator(".kpi-availability").inner_text() == "76.9% 10/13"
        assert "Not ready for blocking mode" in await page.locator("#readiness").inner_text()

        chart = page.locator("#verdict-chart")
        assert await chart.get_attribute("role") == "img"
        assert await page.locator("#verdict-chart rect.bar").count() >= 5
        tooltip = await page.locator("#verdict-chart rect.bar title").first.text_content()
        assert tooltip is not None and " of " in tooltip
        shot = await chart.screenshot()
        (tmp_path / "chart.png").write_bytes(shot)
        assert coloured_pixels(read_png(shot)) > MIN_CHART_PIXELS
        await context.close()


async def test_the_filters_change_the_numbers(
    browser: Browser, tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    await seed(sqlite_storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        context = await browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        page = await context.new_page()
        await page.goto(str(client.make_url("/dashboard")))
        await page.select_option("select[name=repo]", "octo/api")
        await page.click("#filters button")
        await page.wait_for_url("**/dashboard?repo=octo%2Fapi&days=14&tag=")
        assert await number(page, "judgments") == 3
        assert await number(page, "flagged-count") == 1
        assert await page.locator("#kpis tr[data-scope='octo/docs']").count() == 0
        await page.select_option("select[name=repo]", "")
        await page.select_option("select[name=days]", "1")
        await page.click("#filters button")
        await page.wait_for_url("**/dashboard?repo=&days=1&tag=")
        assert await number(page, "judgments") == 1
        assert await number(page, "count-accept") == 1
        assert "1 days" in await page.locator("#window").inner_text()
        await context.close()


async def test_anonymous_is_refused_and_a_person_signs_in_and_out(
    browser: Browser, tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    await seed(sqlite_storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        context = await browser.new_context()
        page = await context.new_page()
        refused = await page.goto(str(client.make_url("/dashboard")))
        assert refused is not None and refused.status == 401
        assert await page.locator("#judgments").count() == 0
        await page.fill("input[name=token]", "a guess")
        await page.click("#sign-in button")
        assert "not the dashboard token" in await page.locator("#problem").inner_text(timeout=3000)
        await page.fill("input[name=token]", TOKEN)
        await page.click("#sign-in button")
        await page.wait_for_url("**/dashboard")
        assert await number(page, "judgments") == 9
        (cookie,) = await context.cookies()
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert TOKEN not in cookie["value"]
        assert await page.evaluate("document.cookie") == ""  # HttpOnly: no script sees it
        await page.click("text=Sign out")
        await page.wait_for_url("**/dashboard/sign-in")
        assert await context.cookies() == []
        again = await page.goto(str(client.make_url("/dashboard")))
        assert again is not None and again.status == 401
        await context.close()


async def test_the_merge_queues_and_the_tag_filter(
    browser: Browser, tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    """Two pull requests queued into octo/docs main show head first, linked; choosing a tag
    leaves the one flagged item that carries it."""
    await seed(sqlite_storage)
    [a4] = await sqlite_storage.list_verdicts(task_id="octo/docs#4")
    await sqlite_storage.append_verdict(
        task_id="octo/docs#4", repository="octo/docs", head_sha=a4.head_sha, verdict="improve",
        created_at=a4.created_at + timedelta(minutes=1), record=a4.record | {"tags": ["style"]},
    )  # fmt: skip
    for pull in (11, 12):
        entry = NewMergeEntry(repository="octo/docs", base_branch="main", pull_number=pull,
                              installation_id=7, judged_sha="c" * 40, method="merge",
                              options=MergeOptions())  # fmt: skip
        await sqlite_storage.enqueue_merge(entry, actor="alice", reason="approved", now=NOW)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        context = await browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        page = await context.new_page()
        await page.goto(str(client.make_url("/dashboard")))
        assert await number(page, "queues-count") == 1
        rows = page.locator("table.queue tr.queue-entry")
        assert await rows.count() == 2
        assert await rows.nth(0).locator(".queue-position").inner_text() == "1"
        assert await rows.nth(0).locator(".queue-state").inner_text() == "next"
        assert await rows.nth(1).locator(".queue-state").inner_text() == "queued"
        assert await rows.nth(1).locator("a").get_attribute("href") == (
            "https://github.com/octo/docs/pull/12"
        )
        caption = await page.locator("table.queue caption").inner_text()
        assert caption == "octo/docs, into main"
        assert await number(page, "flagged-count") == 5
        await page.select_option("select[name=tag]", "style")
        await page.click("#filters button")
        await page.wait_for_url("**/dashboard?repo=&days=14&tag=style")
        assert await number(page, "flagged-count") == 1
        assert await page.locator("#flagged .flagged-tags").inner_text() == "style"
        await context.close()
