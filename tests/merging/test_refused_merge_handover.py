"""The App's own queue meets a branch that came to require GitHub's merge queue: GitHub
refuses the merge (405, "Changes must be made through the merge queue"), and the queue's
step hands the pull request to GitHub's queue at the judged sha instead of spending its
attempts (`driver.run_step` with `github_handover.hand_over_refused_merge`)."""

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
    until_status,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("fake_github")


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    async with merge_harness(
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        fast_settings(merge_queue_max_attempts=1000),
    ) as h:
        yield h


async def test_a_405_for_the_merge_queue_hands_the_pull_request_over(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"})
    number = open_pull(bot.fake, sha)
    pull = bot.fake.repo(REPO).pulls[number]
    pull.checks_pending = True
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))

    async def queued() -> bool:
        return await bot.storage.active_merge(REPO.lower(), number) is not None

    await wait_for(queued)
    # The rule comes after the App read the branch's rules (no queue then, cached).
    bot.fake.merge_queue.enable(REPO, "main")
    pull.checks_pending = False
    await bot.send("check_suite", check_suite_completed(bot.fake, sha))
    await until_status(bot, number, MergeStatus.DROPPED)
    assert bot.fake.merge_queue.entries(REPO, "main") == [number]
    assert bot.fake.merges.merged == []
    last = (await events_of(bot.storage, number))[-1]
    assert last.reason.startswith("handed to GitHub's merge queue for `main`")
