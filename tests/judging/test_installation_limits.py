"""Limits count per installation (end to end): one installation that used its daily model
calls is refused, another installation is still judged."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.github.client import GitHubApp
from tests.support.fakes.github_fixtures import KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    REPO,
    Harness,
    commit_files,
    harness,
    open_pull,
    pull_request_payload,
    scores,
)

OTHER = "other/notes"


@pytest.fixture
async def throttled_bot(
    tmp_path: Path,
    github_keypair: KeyPair,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    fake_github.add_installation(2, "other")
    fake_github.add_repo(OTHER, default_branch="main", installation_id=2)
    async with harness(
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        daily_call_budget=1,
    ) as h:
        yield h


async def judge(bot: Harness, repo: str, installation: int, branch: str) -> str:
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC + branch}, branch=branch, repo=repo)
    number = open_pull(bot.fake, sha, branch=branch, repo=repo)
    payload = pull_request_payload(
        bot.fake, "opened", number, repo=repo, installation_id=installation
    )
    await bot.send("pull_request", payload)
    [run] = bot.check_runs(repo=repo, sha=sha)
    return str(run.output["title"])


async def test_the_daily_budget_is_per_installation(
    throttled_bot: Harness,
) -> None:
    bot = throttled_bot
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
    assert "accept" in await judge(bot, REPO, 1, "first")
    assert "budget" in (await judge(bot, REPO, 1, "second")).lower()
    assert "accept" in await judge(bot, OTHER, 2, "elsewhere")
    assert len(bot.llm.requests) == 2
