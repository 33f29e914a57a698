"""Throttle and budget refusals through the real webhook endpoint (issue "Hardening", 3c).

An author who can exhaust the hourly throttle or the day's budget must not get a change
through a required check that way: in blocking mode a refused judgment concludes
`action_required`; a provider outage still fails open (neutral), and says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
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

BotFactory = Callable[..., AbstractAsyncContextManager[Harness]]


@pytest.fixture
async def bot_with(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[BotFactory]:
    """A bot on `octo/hello` whose judge settings the test chooses."""

    def make(**config: Any) -> AbstractAsyncContextManager[Harness]:
        return harness(
            tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, **config
        )

    yield make


def set_mode(fake: FakeGitHub, mode: str) -> None:
    fake.add_commit(
        REPO, {".github/judge.yml": f"mode: {mode}\n"}, message="Configure", branch="main"
    )


async def open_and_judge(bot: Harness, text: str = GOOD_DOC) -> Any:
    sha = commit_files(bot.fake, {"docs/notes.md": text})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    return run


@pytest.mark.parametrize(
    ("settings", "word"),
    [({"throttle_per_hour": 0}, "throttle"), ({"daily_call_budget": 0}, "budget")],
    ids=["throttle", "budget"],
)
async def test_refusal_asks_for_a_maintainer_in_blocking_mode(
    bot_with: BotFactory, fake_github: FakeGitHub, settings: dict[str, Any], word: str
) -> None:
    set_mode(fake_github, "blocking")
    async with bot_with(**settings) as bot:
        run = await open_and_judge(bot)
        assert bot.llm.requests == [], "a refused judgment asks no model"
    assert run.conclusion == "action_required"
    phrase = f"not judged: {word}; a maintainer may rerun or override"
    assert run.output["title"].startswith(phrase)
    assert phrase in run.output["summary"]


async def test_the_twenty_first_judgment_of_the_hour_is_not_a_pass(
    bot_with: BotFactory, fake_github: FakeGitHub
) -> None:
    """The scenario of the issue: the author's own pull requests use up the throttle."""
    set_mode(fake_github, "blocking")
    async with bot_with(throttle_per_hour=1) as bot:
        bot.llm.script(QUICK, scores(*ACCEPT))
        first = await open_and_judge(bot)
        second = await open_and_judge(bot, GOOD_DOC + "\nMore.\n")
    assert first.conclusion == "success"
    assert second.conclusion == "action_required"
    assert second.output["title"].startswith("not judged: throttle")


@pytest.mark.parametrize("settings", [{"throttle_per_hour": 0}, {"daily_call_budget": 0}])
async def test_refusal_stays_neutral_in_advisory_mode(
    bot_with: BotFactory, settings: dict[str, Any]
) -> None:
    async with bot_with(**settings) as bot:
        run = await open_and_judge(bot)
    assert run.conclusion == "neutral"
    assert "would conclude `action_required`" in run.output["summary"]


async def test_provider_outage_fails_open_and_says_so(
    bot_with: BotFactory, fake_github: FakeGitHub
) -> None:
    set_mode(fake_github, "blocking")
    async with bot_with() as bot:
        bot.llm.script(QUICK, Reply.server_error(), Reply.server_error())
        run = await open_and_judge(bot)
    assert run.conclusion == "neutral"
    assert "the judges could not be reached; fail-open" in run.output["summary"]
