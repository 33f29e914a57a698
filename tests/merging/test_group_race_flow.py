"""A reject that lands while a merge group is still being judged: the group's judgment,
finishing afterwards, must not turn the failed run back into a success (GitHub's queue
would merge the rejected head)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.judging.state import load_state, state_key
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import ACCEPT, QUICK, REPO, Harness, comment_payload, scores
from tests.support.merge_helpers import (
    accepted_pull,
    fast_settings,
    merge_group_event,
    merge_harness,
    queue_group,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("fake_github")

# Long enough for the reject's whole delivery to be processed while the model "thinks";
# the test asserts that it was, so a slower machine fails loudly instead of passing.
MODEL_THINKS_SECONDS = 2.0


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    settings = fast_settings(merge_on_approve=False)
    async with merge_harness(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, settings
    ) as harness:
        yield harness


def group_conclusions(bot: Harness, head: str) -> list[str | None]:
    return [run.conclusion for run in bot.check_runs(sha=head)]


async def judge_group_while_rejecting(bot: Harness, reject: str) -> tuple[int, str, str]:
    """The group (an accepted pull request plus a watched change nobody judged) goes to
    the model; while the model answers, `reject` is commented on the pull request. Returns
    (number, pull head, group head) once both deliveries are done."""
    number, sha = await accepted_pull(bot)
    head = queue_group(bot.fake, number, {"docs/extra.md": "# Extra\n\nFrom the base.\n"})
    asked = len(bot.llm.requests)
    bot.llm.script(QUICK, replace(scores(*ACCEPT), delay=MODEL_THINKS_SECONDS))
    event = merge_group_event(bot.fake, "checks_requested", number, head)
    judging = asyncio.create_task(bot.send("merge_group", event))
    await wait_for(lambda: len(bot.llm.requests) > asked, what="the group's model request")
    assert group_conclusions(bot, head) == [None]
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send("issue_comment", comment_payload(REPO, number, reject, "maintainer"))
    assert not judging.done(), "the reject must land while the group is being judged"
    assert group_conclusions(bot, head) == ["failure"]
    await judging
    return number, sha, head


async def test_a_reject_while_the_group_is_judged_keeps_the_group_failed(bot: Harness) -> None:
    number, sha, head = await judge_group_while_rejecting(bot, "/judge override reject")
    [run] = bot.check_runs(sha=head)
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert f"merges #{number} at `{sha[:7]}`" in run.output["summary"]
    state = await load_state(bot.storage, state_key(REPO, head))
    assert state is not None and (state.verdict, state.conclusion) == ("reject", "failure")
    # Checks requested again for that group keep it failed, without the model.
    asked = len(bot.llm.requests)
    await bot.send("merge_group", merge_group_event(bot.fake, "checks_requested", number, head))
    assert group_conclusions(bot, head) == ["failure"]
    assert len(bot.llm.requests) == asked
