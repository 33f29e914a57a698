"""The queue's worker: a failing step waits without spending an attempt, the worker is
installed once per hub, and it idles until the app has services."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.app import SERVICES
from bot.github.client import GitHubApp
from bot.merging.github_calls import first_allowed_method
from bot.merging.merge_notices import escalated, merged, queue_line
from bot.merging.queue_worker import MergeQueueWorker, merge_queue_ctx
from bot.merging.step import CONFLICT_LABEL, FAILED_LABEL
from bot.services import ServiceHub
from bot.settings.merge import MergeSettings, default_merge_settings
from bot.storage.base import MergeOptions, MergeStatus, NewMergeEntry, Storage
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
    REPO,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.merge_helpers import (
    check_suite_completed,
    events_of,
    fast_settings,
    merge_harness,
    until_status,
)


@pytest.mark.usefixtures("fake_github")
async def test_a_failing_step_waits_without_spending_an_attempt(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> None:
    settings = fast_settings(merge_queue_max_attempts=1)
    async with merge_harness(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, settings
    ) as bot:
        sha = commit_files(fake_github, {"docs/notes.md": "# Notes\n\nok\n"})
        number = open_pull(fake_github, sha)
        fake_github.repo(REPO).pulls[number].checks_pending = True
        fake_llm.script(QUICK, scores(*ACCEPT))
        hub = bot.app[SERVICES]
        hub.services.merge = fast_settings(merge_queue_retry_delay_ms=600_000)
        await bot.send("pull_request", pull_request_payload(fake_github, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        fake_github.repo(REPO).pulls[number].checks_pending = False
        fake_github.inject("pulls/merge", status=403)
        hub.services.merge = settings
        await bot.send("check_suite", check_suite_completed(fake_github, sha))
        await until_status(bot, number, MergeStatus.MERGED)
        reasons = [e.reason for e in await events_of(bot.storage, number)]
        assert "step failed (BadRequest); tried again later" in reasons


async def test_worker_idles_without_services_and_is_installed_once(
    sqlite_storage: Storage,
) -> None:
    hub = ServiceHub()
    worker = MergeQueueWorker(sqlite_storage, hub, lambda: datetime.now(UTC), "w")
    assert worker.settings == default_merge_settings()
    assert await worker.run_once() == 0
    assert await worker.seconds_to_wait() == 5.0
    await sqlite_storage.enqueue_merge(
        NewMergeEntry("o/r", "main", 1, 1, "a" * 40, "merge", MergeOptions()),
        actor="t",
        reason="t",
        now=datetime.now(UTC) + timedelta(seconds=1),
    )
    assert 0 < await worker.seconds_to_wait() <= 1.0
    app = web.Application()
    hub.merge_doorbell.listening = True
    installed = merge_queue_ctx(sqlite_storage, hub, lambda: datetime.now(UTC))(app)
    await installed.__anext__()
    assert hub.merge_doorbell.listening
    with pytest.raises(StopAsyncIteration):
        await installed.__anext__()
    off = merge_queue_ctx(sqlite_storage, ServiceHub(), datetime.now, enabled=False)(app)
    await off.__anext__()
    with pytest.raises(StopAsyncIteration):
        await off.__anext__()


async def test_doorbell_wakes_a_waiter_at_once() -> None:
    bell = ServiceHub().merge_doorbell
    assert not await bell.wait(0.01)
    bell.ring()
    assert await bell.wait(5)


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_MERGE_ON_APPROVE", "true")
    monkeypatch.setenv("JUDGE_MERGE_QUEUE_MAX_ATTEMPTS", "5")
    settings = MergeSettings(_env_file=None)
    assert settings.merge_on_approve and settings.merge_queue_max_attempts == 5
    assert settings.retry_delay == timedelta(seconds=30)
    assert settings.precheck_delay == timedelta(seconds=1)
    assert settings.claim_ttl_seconds == 120.0
    defaults = default_merge_settings()
    assert not defaults.merge_on_approve
    assert defaults.non_approve_circuit_breaker_retries == 2
    assert defaults.requeue_on_non_approve


def test_first_allowed_merge_method() -> None:
    assert first_allowed_method({}) == "merge"
    assert first_allowed_method({"allow_merge_commit": False}) == "squash"
    only_rebase = {"allow_merge_commit": False, "allow_squash_merge": False}
    assert first_allowed_method(only_rebase) == "rebase"
    assert first_allowed_method({**only_rebase, "allow_rebase_merge": False}) == "merge"


def test_messages_escape_what_people_named() -> None:
    line = queue_line("<b>main</b>", 3)
    assert "position 3" in line and "<b>" not in line
    note = "The branch `topic` was deleted."
    assert merged("a" * 40, "main", "squash", note).endswith(f"(squash). {note}")
    assert merged("a" * 40, "main", "squash").endswith("(squash).")
    assert "[AutoFix-Conflict]" in escalated("x", CONFLICT_LABEL, "main")
    failed = escalated("@team <script>", FAILED_LABEL, "main")
    assert "[Merge-Failed]" in failed and "<script>" not in failed
