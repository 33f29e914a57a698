"""What a merge from the App's own queue cost, on `/metrics`, counted when GitHub says the
pull request was merged (`pull_request` closed), end to end against the fakes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import METRICS
from bot.github.client import GitHubApp
from bot.storage.base import MergeStatus
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import REPO, Harness, commit_files, open_pull
from tests.support.merge_helpers import (
    accepted_pull,
    fast_settings,
    merge_harness,
    pr_event,
    until_status,
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
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, fast_settings()
    ) as h:
        yield h


def metric(bot: Harness, name: str, **labels: str) -> float:
    value = bot.app[METRICS].registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_a_merge_from_the_apps_queue_is_counted_once(bot: Harness) -> None:
    number, _ = await accepted_pull(bot)
    await until_status(bot, number, MergeStatus.MERGED)
    assert metric(bot, "judge_merge_queue_merges_total", queue="app") == 0
    await bot.send("pull_request", pr_event(bot.fake, "closed", number))
    assert metric(bot, "judge_merge_queue_merges_total", queue="app") == 1
    assert metric(bot, "judge_merge_queue_seconds_count", queue="app") == 1
    assert metric(bot, "judge_merge_queue_ci_runs_sum") == 1
    assert metric(bot, "judge_merge_queue_model_calls_sum") == 1
    assert metric(bot, "judge_merge_queue_merges_total", queue="github") == 0


async def test_merges_outside_the_queue_are_not_counted(bot: Harness) -> None:
    """Merged by a person before the App's queue got to it, or after it left the queue at
    another head, or a pull request never queued: none of it is the queue's merge."""
    never = commit_files(bot.fake, {"docs/never.md": "# Never\n\nthin\n"}, branch="never")
    number = open_pull(bot.fake, never, branch="never")
    pull = bot.fake.repo(REPO).pulls[number]
    pull.merged = True
    bot.fake.repo(REPO).issues[number].state = "closed"
    await bot.send("pull_request", pr_event(bot.fake, "closed", number))
    queued, _ = await accepted_pull(bot)
    await until_status(bot, queued, MergeStatus.MERGED)
    bot.fake.repo(REPO).pulls[queued].head_sha = pull.head_sha  # a head it was not merged at
    await bot.send("pull_request", pr_event(bot.fake, "closed", queued))
    assert metric(bot, "judge_merge_queue_merges_total", queue="app") == 0
