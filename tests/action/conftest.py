"""The runner every action test uses: the fake GitHub's repository `octo/hello`, a
workflow token for it, and the judges on the fake LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.action.support import Runner, judges
from tests.support.fakes.github_fixtures import INSTALLATION_ID
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer


@pytest.fixture
def runner(tmp_path: Path, fake_github: FakeGitHub, fake_llm: FakeOpenAIServer) -> Runner:
    """`judge-bot action` as a subprocess, as the action's step runs it."""
    token = fake_github.issue_token(INSTALLATION_ID)
    return Runner(fake_github, fake_llm, tmp_path, token, judges(fake_llm))


@pytest.fixture
def local_runner(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> Runner:
    """The same command in a thread of this process (measured by coverage)."""
    runner.in_process = True
    runner.monkeypatch = monkeypatch
    return runner
