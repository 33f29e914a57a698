"""JUDGE_ALLOWED_MODELS end to end: webhook -> worker -> fake GitHub + fake LLM.

A repository override outside the operator's globs ends in a neutral `judge` run that
names the line of the refused `models.<tier>` and asks no model; one inside them is
judged by the overriding model; the installation's own models are never governed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
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

ALLOWED = ["mistral-*", "openrouter/anthropic/*"]


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    """The bot on `octo/hello`, its operator allowing only ALLOWED as overrides; the
    installation's own models (QUICK, DEEP, TIEBREAKER) are outside that list."""
    async with harness(
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        allowed_models=ALLOWED,
    ) as h:
        yield h


async def judge_with_config(bot: Harness, config: str | None) -> Any:
    if config is not None:
        bot.fake.add_commit(REPO, {".github/judge.yml": config}, message="Configure", branch="main")
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    return run


async def test_refused_override_is_a_neutral_run_naming_its_line(bot: Harness) -> None:
    run = await judge_with_config(
        bot, "mode: blocking\nmodels:\n  deep: mistral-large\n  quick: gpt-5\n"
    )
    assert (run.status, run.conclusion) == ("completed", "neutral")
    assert run.output["title"] == "configuration error · line 4 · models.quick"
    summary = run.output["summary"]
    assert ".github/judge.yml` line 4" in summary
    assert '"gpt-5"' in summary
    assert '"mistral-*", "openrouter/anthropic/*"' in summary
    assert "JUDGE_ALLOWED_MODELS" in summary
    [note] = run.output["annotations"]
    assert (note["path"], note["start_line"]) == (".github/judge.yml", 4)
    assert bot.llm.api_key not in str(run.output)
    assert bot.llm.requests == []


async def test_allowed_override_is_judged_by_the_overriding_model(bot: Harness) -> None:
    model = "openrouter/anthropic/claude-sonnet-4.5"
    bot.llm.script(model, scores(*ACCEPT))
    run = await judge_with_config(bot, f"models:\n  quick: {model}\n")
    assert run.conclusion == "success"
    assert [r.model for r in bot.llm.requests] == [model]


async def test_installation_models_are_not_governed(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*ACCEPT))
    run = await judge_with_config(bot, None)
    assert run.conclusion == "success"
    assert [r.model for r in bot.llm.requests] == [QUICK]
