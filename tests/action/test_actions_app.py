"""Which App owns the action's own check runs: `github-actions`, whose id is 15368 on
github.com and the server's own on GitHub Enterprise Server (read from the commit's check
runs, of which the running job is one)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from bot.action.github import (
    GITHUB_ACTIONS_APP_ID,
    WorkflowGitHub,
    event_head,
    learn_actions_app,
)
from bot.github.client import GITHUB_API_URL
from tests.support.fakes.github_fixtures import INSTALLATION_ID
from tests.support.fakes.github_server import FakeGitHub
from tests.support.flow_helpers import GOOD_DOC, REPO, commit_files

SHA = "a" * 40


async def learned(fake: FakeGitHub, api_url: str, head_sha: str) -> str:
    async with aiohttp.ClientSession() as session:
        github = WorkflowGitHub(
            app_id="",
            private_key="",
            session=session,
            api_url=api_url,
            token=fake.issue_token(INSTALLATION_ID),
        )
        await learn_actions_app(github, REPO, head_sha)
        return github.app_id


async def test_on_a_server_the_id_comes_from_the_jobs_own_check_run(
    fake_github: FakeGitHub,
) -> None:
    sha = commit_files(fake_github, {"docs/notes.md": GOOD_DOC})
    fake_github.add_check_run(REPO, sha, "lint", app_slug="ci", app_id=7)
    fake_github.add_check_run(REPO, sha, "judge-bot", app_slug="github-actions", app_id=4242)
    assert await learned(fake_github, fake_github.base_url, sha) == "4242"


async def test_without_a_run_of_github_actions_the_id_is_github_coms(
    fake_github: FakeGitHub,
) -> None:
    sha = commit_files(fake_github, {"docs/notes.md": GOOD_DOC})
    assert await learned(fake_github, fake_github.base_url, sha) == GITHUB_ACTIONS_APP_ID


async def test_on_github_com_no_call_is_made(fake_github: FakeGitHub) -> None:
    assert await learned(fake_github, GITHUB_API_URL + "/", SHA) == GITHUB_ACTIONS_APP_ID
    assert await learned(fake_github, fake_github.base_url, "") == GITHUB_ACTIONS_APP_ID
    assert fake_github.calls == []


@pytest.mark.parametrize(
    ("event", "data", "head"),
    [
        ("pull_request", {"pull_request": {"head": {"sha": SHA}}}, SHA),
        ("push", {"after": SHA}, SHA),
        ("push", {"after": "0" * 40}, ""),  # the branch was deleted
        ("merge_group", {"merge_group": {"head_sha": SHA}}, SHA),
        ("issue_comment", {"comment": {}}, ""),
        ("pull_request", {}, ""),
    ],
)
def test_the_commit_an_event_is_about(event: str, data: dict[str, Any], head: str) -> None:
    assert event_head(event, data) == head
