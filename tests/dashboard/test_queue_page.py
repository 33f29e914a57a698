"""The readable queue on the page, through the whole app: the App's queue with each entry's
time to merge and priority, what the App handed to GitHub's merge queue, and why pull
requests left, as HTML (SQLite and PostgreSQL) and in headless Chromium."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.merging.github_handover import HANDED_NAMESPACE, HandedOver, HandoverState
from bot.storage.base import (
    MergeOptions,
    MergePriority,
    MergeStatus,
    NewMergeEntry,
    Storage,
)
from tests.dashboard.support import TOKEN, bearer, dashboard_settings, seed, serving
from tests.dashboard.test_browser import CHROMIUM, browser
from tests.reports.seeded import NOW

if TYPE_CHECKING:
    from playwright.async_api import Browser

__all__ = ["browser"]


def queued(number: int, repository: str = "octo/docs") -> NewMergeEntry:
    return NewMergeEntry(repository=repository, base_branch="main", pull_number=number,
                         installation_id=7, judged_sha="a" * 40, method="squash",
                         options=MergeOptions())  # fmt: skip


async def with_queues(storage: Storage) -> None:
    """octo/docs: #3 merged after 30 minutes as the head, #4 dropped ("new commits
    pushed"), #5 and #9 queued (#9 urgent); octo/api: #21 in GitHub's merge queue, #20
    left it."""
    await seed(storage)
    start = NOW - timedelta(hours=2)
    await storage.enqueue_merge(queued(3), actor="judge", reason="accepted", now=start)
    await storage.leave_merge_queue("octo/docs", 3, status=MergeStatus.MERGED, actor="queue",
                                    reason="merged at the judged commit aaaaaaa",
                                    now=start + timedelta(minutes=30))  # fmt: skip
    await storage.enqueue_merge(queued(4), actor="judge", reason="accepted", now=start)
    await storage.leave_merge_queue("octo/docs", 4, status=MergeStatus.DROPPED, actor="agent",
                                    reason="new commits pushed",
                                    now=start + timedelta(minutes=40))  # fmt: skip
    for number in (5, 9):
        await storage.enqueue_merge(queued(number), actor="judge", reason="accepted", now=NOW)
    await storage.set_merge_priority(
        "octo/docs", 9, MergePriority.URGENT, actor="maintainer", now=NOW
    )
    for number, state, reason in (
        (21, HandoverState.QUEUED, ""),
        (20, HandoverState.LEFT, "GitHub's merge queue: ci failure"),
    ):
        record = HandedOver(
            "octo/api", number, "main", "b" * 40, f"PR_{number}", "judge", NOW, state,
            position=1, eta_seconds=1800, left_reason=reason,
            left_at=None if state is HandoverState.QUEUED else NOW,
        )  # fmt: skip
        await storage.kv_put(HANDED_NAMESPACE, f"octo/api#{number}", record.as_json())


def rows(html: str, kind: str) -> list[str]:
    return re.findall(rf'<tr class="{kind}">(.*?)</tr>', html)


async def test_the_page_says_when_and_why(
    tmp_path: Path, github_keypair: Any, storage: Storage
) -> None:
    await with_queues(storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, storage) as client:
        html = await (await client.get("/dashboard", headers=bearer())).text()
        assert re.search(r'id="queues-count">2<', html)
        entries = rows(html, "queue-entry")
        assert len(entries) == 3
        urgent, normal, github = entries
        assert "#9" in urgent and '<span class="queue-priority">urgent</span>' in urgent
        assert '<td class="queue-eta">about 30 minutes</td>' in urgent
        assert "#5" in normal and '<td class="queue-eta">about 60 minutes</td>' in normal
        assert "#21" in github and ">in GitHub&#39;s merge queue<" in github
        assert "octo/api, into <code>main</code> (GitHub&#39;s merge queue)" in html
        departed = rows(html, "departed-entry")
        assert len(departed) == 3
        assert ">GitHub&#39;s merge queue: ci failure<" in departed[0]
        assert ">new commits pushed<" in departed[1] and ">left<" in departed[1]
        assert ">merged at the judged commit aaaaaaa<" in departed[2]
        only = await client.get("/dashboard", params={"repo": "octo/api"}, headers=bearer())
        filtered = await only.text()
        assert len(rows(filtered, "queue-entry")) == 1
        assert len(rows(filtered, "departed-entry")) == 1


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: browser tests skipped")
async def test_the_readable_queue_in_a_browser(
    browser: Browser, tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    await with_queues(sqlite_storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        context = await browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        page = await context.new_page()
        await page.goto(str(client.make_url("/dashboard")))
        entries = page.locator("table.queue tr.queue-entry")
        assert await entries.count() == 3
        assert await entries.nth(0).locator(".queue-priority").inner_text() == "urgent"
        assert await entries.nth(0).locator(".queue-eta").inner_text() == "about 30 minutes"
        assert await entries.nth(2).locator(".queue-eta").inner_text() == "about 30 minutes"
        captions = [await c.inner_text() for c in await page.locator("table.queue caption").all()]
        assert captions == ["octo/docs, into main", "octo/api, into main (GitHub's merge queue)"]
        reasons = page.locator("table.queue-departed .departed-reason")
        assert [await r.inner_text() for r in await reasons.all()] == [
            "GitHub's merge queue: ci failure",
            "new commits pushed",
            "merged at the judged commit aaaaaaa",
        ]
        await context.close()
