"""A GitHub event that arrives while the queue's head is being stepped is not lost.

The step reads the pull request (`blocked`: a required check is running); the check
finishes and GitHub says so (`check_suite` completed) before the step has settled. The
entry must be due again at once, not after the fallback timer (here ten minutes away).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.storage.base import MergeStatus
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
    REPO,
    Harness,
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
    status_event,
    until_status,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("fake_github")

BLOCKED = "required checks or reviews are not complete"


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    """Only an event can move the queue within the test: the timer is ten minutes."""
    settings = fast_settings(merge_queue_retry_delay_ms=600_000)
    async with merge_harness(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, settings
    ) as h:
        yield h


async def test_check_suite_completed_during_the_step_merges_without_the_timer(
    bot: Harness,
) -> None:
    bot.fake.merges.unknown_reads_after_push = 0
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"})
    number = open_pull(bot.fake, sha)
    repo = bot.fake.repo(REPO)
    pull = repo.pulls[number]
    pull.checks_pending = True
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    await wait_for(lambda: bot.fake.count("pulls/get") >= 2, what="the first step")
    await until_status(bot, number, MergeStatus.PENDING)

    # The next step's read answers what GitHub saw before the check finished; it is held
    # until the check_suite event has been handled, so the event lands mid-step.
    bot.fake.inject("pulls/get", status=200, body=bot.fake.merges.shapes.pull_json(repo, pull))
    bot.fake.hold("pulls/get")
    await bot.send("status", status_event(bot.fake, sha, "pending"))
    await wait_for(bot.fake.held.is_set, what="the step's read of the pull request")
    pull.checks_pending = False
    await bot.send("check_suite", check_suite_completed(bot.fake, sha))
    active = await bot.storage.active_merge(REPO.lower(), number)
    assert active is not None and active.status is MergeStatus.PROCESSING
    bot.fake.release()

    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]
    assert bot.fake.count("pulls/merge") == 1
    reasons = [e.reason for e in await events_of(bot.storage, number)]
    # The interrupted step waits without spending an attempt (an event set it off), and
    # the next claim follows at once instead of ten minutes later.
    assert reasons[1:] == [
        "claimed",
        f"attempt 1 of 3: {BLOCKED}",
        "claimed",
        BLOCKED,
        "claimed",
        f"merged at the judged commit {sha[:7]}",
    ]
