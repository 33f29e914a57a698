"""Pytest fixtures for end-to-end flow tests: the app wired to the fake GitHub and LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import REPO, Harness, harness


@pytest.fixture
async def advisory_bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    """The bot on `octo/hello` with no `.github/judge.yml` (advisory mode)."""
    async with harness(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm
    ) as h:
        yield h


@pytest.fixture
async def blocking_bot(fake_github: FakeGitHub, advisory_bot: Harness) -> Harness:
    """The same bot after the repository configured `mode: blocking`."""
    fake_github.add_commit(
        REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure", branch="main"
    )
    return advisory_bot
