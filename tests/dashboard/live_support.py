"""The whole app judging through its webhook endpoint with the dashboard on: the fake
GitHub and the fake LLM, as the end-to-end tests wire them (tests/support/flow_helpers),
and judgments and an override written the way GitHub would cause them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from bot.github.client import GitHubApp
from bot.settings.features import FeatureSettings
from bot.storage import storage_from_url
from tests.commands.written import comment_now
from tests.dashboard.support import TOKEN
from tests.support.app_helpers import make_settings, running_app
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    QUICK,
    REJECT,
    REPO,
    Harness,
    commit_files,
    judge_settings,
    open_pull,
    pull_request_payload,
    scores,
)

MAINTAINER = "maintainer"


@asynccontextmanager
async def judging_app(
    tmp_path: Path,
    private_pem: str,
    fake: FakeGitHub,
    github_app: GitHubApp,
    llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    """The app on loopback, in blocking mode on `octo/hello`, with DASHBOARD_TOKEN set."""
    settings = make_settings(
        private_pem,
        tmp_path,
        JUDGE_RETRY_BASE_SECONDS=0.01,
        JUDGE_MAX_ATTEMPTS=2,
        DASHBOARD_TOKEN=TOKEN,
    )
    fake.add_commit(REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure")
    store = storage_from_url(settings.database_url)
    async with running_app(
        settings,
        storage=store,
        github=github_app,
        judge_settings=judge_settings(llm),
        features=FeatureSettings(),
    ) as (client, app):
        yield Harness(client, app, store, fake, llm, settings.webhook_path)


@dataclass(frozen=True)
class Judged:
    accepted: int
    rejected: tuple[int, int]
    overridden: int
    """The pull request of the second rejection, which a maintainer then accepted."""


async def judge_pull(bot: Harness, number: int, *, accept: bool) -> int:
    """Opens a pull request whose judges accept or reject it; returns its number."""
    if accept:
        bot.llm.script(QUICK, scores(*ACCEPT))
    else:
        bot.llm.script(QUICK, scores(*REJECT))
        bot.llm.script(DEEP, scores(*REJECT))
    text = f"# Notes {number}\n\n" + ("A clear, sourced explanation.\n" if accept else "thin\n")
    sha = commit_files(bot.fake, {f"docs/notes-{number}.md": text}, branch=f"topic-{number}")
    pull = open_pull(bot.fake, sha, branch=f"topic-{number}")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", pull))
    return pull


async def three_judgments_and_an_override(bot: Harness) -> Judged:
    """What the issue's user did: three judgments, then one overridden, all by webhook."""
    accepted = await judge_pull(bot, 1, accept=True)
    first = await judge_pull(bot, 2, accept=False)
    second = await judge_pull(bot, 3, accept=False)
    bot.fake.set_permission(REPO, MAINTAINER, "maintain")
    await bot.send("issue_comment", comment_now(REPO, second, "/judge override accept", MAINTAINER))
    return Judged(accepted, (first, second), second)
