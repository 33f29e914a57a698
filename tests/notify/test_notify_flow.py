"""Notifications from the real flow: webhooks in through the endpoint, the fake GitHub and
the fake LLM behind it, a real webhook receiver for the notices."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import SERVICES
from bot.github.client import GitHubApp
from bot.settings.features import FeatureSettings
from bot.settings.notify import NotifySettings
from tests.notify.conftest import Receiver
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.flow_helpers import (
    DEEP,
    GOOD_DOC,
    IMPROVE,
    QUICK,
    REPO,
    Harness,
    commit_files,
    harness,
    open_pull,
    pull_request_payload,
    scores,
)


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
    receiver: Receiver,
) -> AsyncIterator[Harness]:
    notify = NotifySettings(notify_url=receiver.url, notify_attempts=1, notify_outage_after=2)
    async with harness(
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        features=FeatureSettings(notify=notify),
    ) as h:
        yield h


async def drained(bot: Harness) -> None:
    notifier = bot.app[SERVICES].services.notifier
    assert notifier is not None
    await notifier.drain(within_seconds=10)


async def open_and_judge(bot: Harness, text: str) -> int:
    sha = commit_files(bot.fake, {"docs/notes.md": text})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    return number


async def test_an_escalation_issue_is_notified_once(bot: Harness, receiver: Receiver) -> None:
    bot.llm.script(QUICK, scores(*IMPROVE), scores(*IMPROVE))
    bot.llm.script(DEEP, scores(*IMPROVE), scores(*IMPROVE))
    number = await open_and_judge(bot, "# Notes\n\nfirst\n")
    await drained(bot)
    [issue] = bot.issues()
    [body] = receiver.bodies
    assert body["kind"] == "escalation" and body["repository"] == REPO
    assert body["url"].endswith(f"/issues/{issue.number}")
    # The same change delivered again (a redelivery) opens nothing new and sends nothing.
    await bot.send("pull_request", pull_request_payload(bot.fake, "reopened", number))
    await drained(bot)
    assert len(receiver.bodies) == 1


async def test_judgments_the_providers_fail_in_a_row_are_one_outage_notice(
    bot: Harness, receiver: Receiver
) -> None:
    bot.llm.script(QUICK, *[Reply.server_error() for _ in range(12)])
    for text in ("# One\n", "# Two\n", "# Three\n"):
        await open_and_judge(bot, GOOD_DOC + text)
    await drained(bot)
    assert [body["kind"] for body in receiver.bodies] == ["provider_outage"]
    assert "2 judgments in a row" in receiver.bodies[0]["text"]
