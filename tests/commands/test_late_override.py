"""An override comment decides only the head it was written about (issue "the gate's
guarantee", defect 6), through the real webhook endpoint with the merge queue on.

A comment's delivery can be worked on long after it was written (a backlog, a retry, a
rate-limit deferral, recovered missed deliveries). By then the pull request may have a new
head the judges rejected; an `/judge override accept` written about the old head must not
approve it, or the queue merges a commit no person accepted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.judging.state import load_state, save_state, state_key
from bot.storage.base import MergeStatus
from tests.commands.written import comment_at, comment_now, next_second
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    DEEP,
    QUICK,
    REJECT,
    REPO,
    Harness,
    click,
    commit_files,
    pull_request_payload,
    rejected_pull,
    scores,
)
from tests.support.merge_helpers import events_of, fast_settings, merge_harness, until_status

pytestmark = pytest.mark.usefixtures("fake_github")

MAINTAINER = "maintainer"


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
        # Blocking mode: a rejected head fails its run, so only an override could merge it.
        h.fake.add_commit(
            REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure", branch="main"
        )
        h.fake.set_permission(REPO, MAINTAINER, "write")
        yield h


async def push_rejected_head(bot: Harness, number: int) -> str:
    """A new head on the pull request, judged (and rejected) by the judges."""
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nstill thin\n"})
    bot.fake.repo(REPO).pulls[number].head_sha = sha
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))
    assert bot.check_runs(sha=sha)[0].conclusion == "failure"
    return sha


async def overrides_of(bot: Harness, sha: str) -> list[dict[str, Any]]:
    return [
        v.record
        for v in await bot.storage.list_verdicts(head_sha=sha)
        if v.record["human_override"]
    ]


def replies(bot: Harness, number: int) -> list[str]:
    """The bot's answers to the maintainer (not its notices, e.g. a tripped breaker's)."""
    return [c for c in bot.comments(number) if c.startswith(f"@{MAINTAINER},")]


async def assert_untouched(bot: Harness, number: int, sha: str) -> None:
    """Nothing decided `sha`: its run, the audit log and the merge queue are as the judges
    left them."""
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"
    assert "override" not in run.output["title"]
    assert await overrides_of(bot, sha) == []
    assert await bot.storage.active_merge(REPO.lower(), number) is None
    assert await events_of(bot.storage, number) == []
    assert bot.fake.merges.merged == []


async def test_a_late_accept_written_about_the_old_head_does_not_approve_the_new_one(
    bot: Harness,
) -> None:
    number, first = await rejected_pull(bot)
    written = datetime.now(UTC)  # the maintainer comments about the first head...
    second = await push_rejected_head(bot, number)  # ...the author pushes, judged reject...
    # ...and only now is the comment's delivery worked on.
    await bot.send(
        "issue_comment", comment_at(written, REPO, number, "/judge override accept", MAINTAINER)
    )
    await assert_untouched(bot, number, second)
    assert bot.check_runs(sha=first)[0].conclusion == "failure"
    [reply] = replies(bot, number)
    assert "I did not run" in reply and "before judge-bot first saw" in reply
    assert f"`{second[:7]}`" in reply
    assert f"`/judge override accept {second[:7]}`" in reply, "the reply says how to go on"


async def test_a_late_cancel_written_about_the_old_head_keeps_the_new_heads_override(
    bot: Harness,
) -> None:
    """Cancel decides a head too: written about the first head, it must not undo the
    reject a maintainer put on the second."""
    number, _ = await rejected_pull(bot)
    written = datetime.now(UTC)
    second = await push_rejected_head(bot, number)
    await bot.send("issue_comment", comment_now(REPO, number, "/judge override reject", MAINTAINER))
    await bot.send(
        "issue_comment", comment_at(written, REPO, number, "/judge override cancel", MAINTAINER)
    )
    records = [v.record for v in await bot.storage.list_verdicts(head_sha=second)]
    assert [r["human_override"] for r in records] == [None, True], "the cancel was refused"
    assert "override" in bot.check_runs(sha=second)[0].output["title"]
    assert f"`/judge override cancel {second[:7]}`" in replies(bot, number)[-1]


async def test_an_accept_written_after_the_new_head_was_seen_approves_it(bot: Harness) -> None:
    number, _ = await rejected_pull(bot)
    second = await push_rejected_head(bot, number)
    state = await load_state(bot.storage, state_key(REPO, second))
    assert state is not None and state.first_seen_at is not None
    written = next_second(state.first_seen_at)
    await bot.send(
        "issue_comment", comment_at(written, REPO, number, "/judge override accept", MAINTAINER)
    )
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, second, "merge")]


async def test_a_late_accept_pinned_to_the_new_head_approves_it(bot: Harness) -> None:
    """A pinned sha says which head was meant, so when it was written does not matter."""
    number, _ = await rejected_pull(bot)
    written = datetime.now(UTC)
    second = await push_rejected_head(bot, number)
    body = f"/judge override accept {second[:7]}"
    await bot.send("issue_comment", comment_at(written, REPO, number, body, MAINTAINER))
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, second, "merge")]
    [record] = await overrides_of(bot, second)
    assert record["decided_by"] == MAINTAINER


async def test_an_accept_pinned_to_the_old_head_is_refused(bot: Harness) -> None:
    number, first = await rejected_pull(bot)
    second = await push_rejected_head(bot, number)
    body = f"/judge override accept {first[:10]}"
    await bot.send("issue_comment", comment_now(REPO, number, body, MAINTAINER))
    await assert_untouched(bot, number, second)
    [reply] = replies(bot, number)
    assert f"it names `{first[:10]}`, but the head is now `{second[:7]}`" in reply


async def test_a_head_first_seen_before_the_upgrade_needs_a_pin(bot: Harness) -> None:
    """A row from before `first_seen_at` cannot show the comment came after the head:
    refused, and the reply's pinned command then works."""
    number, sha = await rejected_pull(bot)
    key = state_key(REPO, sha)
    state = await load_state(bot.storage, key)
    assert state is not None
    await save_state(bot.storage, key, state.model_copy(update={"first_seen_at": None}))
    await bot.send("issue_comment", comment_now(REPO, number, "/judge override accept", MAINTAINER))
    await assert_untouched(bot, number, sha)
    [reply] = replies(bot, number)
    assert "cannot tell" in reply
    pinned = f"/judge override accept {sha[:7]}"
    assert f"`{pinned}`" in reply
    await bot.send("issue_comment", comment_now(REPO, number, pinned, MAINTAINER))
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]


async def test_buttons_are_pinned_by_their_run(bot: Harness) -> None:
    """A button press carries no time: it is about its run's sha. On the old head's run
    it is refused; on the current head's run it acts."""
    number, first = await rejected_pull(bot)
    [old_run] = bot.check_runs(sha=first)
    second = await push_rejected_head(bot, number)
    await click(bot, old_run.id, first, "override-accept", MAINTAINER, number)
    await assert_untouched(bot, number, second)
    assert "no longer the head" in replies(bot, number)[-1]
    [run] = bot.check_runs(sha=second)
    await click(bot, run.id, second, "override-accept", MAINTAINER, number)
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, second, "merge")]


async def test_a_late_rerun_still_rejudges_the_current_head(bot: Harness) -> None:
    """Judging the current head again decides nothing by itself: `/judge rerun` is not held."""
    number, _ = await rejected_pull(bot)
    written = datetime.now(UTC)
    second = await push_rejected_head(bot, number)
    calls = len(bot.llm.requests)
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    await bot.send("issue_comment", comment_at(written, REPO, number, "/judge rerun", MAINTAINER))
    assert len(bot.llm.requests) > calls
    assert replies(bot, number) == []
    await assert_untouched(bot, number, second)
