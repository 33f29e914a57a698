"""After the step, end to end through the webhook endpoint and the fake GitHub: the merged
branch deleted (`merge.delete_branch`), the conflict comment naming the files, once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from gidgethub.sansio import Event

from bot.app import SERVICES
from bot.github.client import GitHubApp
from bot.merging import handlers
from bot.storage.base import MergeStatus
from tests.support.fakes.github_http import DOCS
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
    REPO,
    Harness,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.merge_helpers import (
    accepted_pull,
    events_of,
    fast_settings,
    handler_context,
    label_event,
    merge_harness,
    review_event,
    until_comment,
    until_status,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("fake_github")

DELETE_BRANCH = "merge:\n  delete_branch: true\n"


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
        yield h


def configure(bot: Harness, text: str) -> None:
    bot.fake.add_commit(REPO, {".github/judge.yml": text}, message="Configure", branch="main")


def refusal(message: str) -> dict[str, str]:
    return {"message": message, "documentation_url": DOCS}


async def merged_comment(bot: Harness, number: int, sha: str) -> str:
    await until_status(bot, number, MergeStatus.MERGED)
    return await until_comment(bot, number, f"Merged {sha[:7]}, the judged commit")


async def test_the_merged_branch_is_deleted_when_configured(bot: Harness) -> None:
    configure(bot, DELETE_BRANCH)
    number, sha = await accepted_pull(bot, branch="topic")
    text = await merged_comment(bot, number, sha)
    assert "The branch `topic` was deleted." in text
    assert bot.fake.merges.deleted_branches == ["topic"]
    assert "topic" not in bot.fake.repo(REPO).branches


async def test_a_branch_github_already_deleted_is_fine(bot: Harness) -> None:
    """GitHub's own automatic deletion got there first: 422 "Reference does not exist"."""
    configure(bot, DELETE_BRANCH)
    bot.fake.inject("git/delete-ref", status=422, body=refusal("Reference does not exist"))
    number, sha = await accepted_pull(bot, branch="topic")
    text = await merged_comment(bot, number, sha)
    assert "The branch `topic` was already deleted." in text
    assert bot.fake.count("git/delete-ref") == 1
    [last] = (await events_of(bot.storage, number))[-1:]
    assert last.to_status is MergeStatus.MERGED


async def test_a_refused_deletion_is_said_and_the_merge_stands(bot: Harness) -> None:
    configure(bot, DELETE_BRANCH)
    bot.fake.inject("git/delete-ref", status=409, body=refusal("Git Repository is empty."))
    number, sha = await accepted_pull(bot, branch="topic")
    text = await merged_comment(bot, number, sha)
    assert "The branch `topic` was not deleted: `Git Repository is empty.`" in text
    assert "topic" in bot.fake.repo(REPO).branches


async def test_github_failing_the_deletion_leaves_the_branch_and_says_so(bot: Harness) -> None:
    """GitHub keeps answering 502: the merge is recorded and reported all the same."""
    configure(bot, DELETE_BRANCH)
    bot.fake.inject("git/delete-ref", status=502, body=refusal("Server Error"), times=10)
    number, sha = await accepted_pull(bot, branch="topic")
    text = await merged_comment(bot, number, sha)
    assert "The branch `topic` was not deleted: `GitHub did not answer (" in text
    assert "topic" in bot.fake.repo(REPO).branches


async def test_no_deletion_unless_configured(bot: Harness) -> None:
    number, sha = await accepted_pull(bot, branch="topic")
    text = await merged_comment(bot, number, sha)
    assert "branch" not in text
    assert bot.fake.count("git/delete-ref") == 0
    assert "topic" in bot.fake.repo(REPO).branches


async def test_the_default_branch_merged_elsewhere_is_never_deleted(bot: Harness) -> None:
    """A pull request from `main` into a release branch: merged, and `main` stays."""
    configure(bot, DELETE_BRANCH)
    repo = bot.fake.repo(REPO)
    bot.fake.add_branch(REPO, "release", repo.branches["main"])
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"}, branch="main")
    bot.llm.script(QUICK, scores(*ACCEPT))
    number = bot.fake.add_pull(REPO, None, sha, "release", head_ref="main", author="agent")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    text = await merged_comment(bot, number, sha)
    assert "branch" not in text
    assert bot.fake.count("git/delete-ref") == 0
    assert "main" in repo.branches


def conflicting_pull(bot: Harness) -> tuple[int, str]:
    """A pull request changing two files, one of which the base changed since."""
    files: dict[str, str | None] = {
        "docs/notes.md": "# Notes\n\nOurs.\n",
        "docs/ours.md": "# Ours\n\nOnly here.\n",
    }
    sha = commit_files(bot.fake, files, branch="topic")
    bot.fake.add_commit(
        REPO,
        {"docs/notes.md": "# Notes\n\nTheirs.\n", "docs/theirs.md": "# Theirs\n"},
        branch="main",
    )
    number = open_pull(bot.fake, sha, branch="topic")
    bot.fake.repo(REPO).pulls[number].conflict = True
    return number, sha


async def test_a_conflict_comment_names_the_files_both_sides_changed_once(bot: Harness) -> None:
    number, _ = conflicting_pull(bot)
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    await until_status(bot, number, MergeStatus.ESCALATED)
    text = await until_comment(bot, number, "[AutoFix-Conflict]")
    assert "Changed both here and on `main` since this branch left it: `docs/notes.md`." in text
    assert "ours.md" not in text and "theirs.md" not in text
    # A maintainer accepts the same head again: queued, still conflicting, escalated, but
    # the comment is not repeated.
    bot.fake.set_permission(REPO, "maintainer", "write")
    steps = bot.fake.count("pulls/get")
    await bot.send(
        "issue_comment", comment_payload(REPO, number, "/judge override accept", "maintainer")
    )
    await wait_for(lambda: bot.fake.count("pulls/get") > steps + 1, what="the step again")
    await until_status(bot, number, MergeStatus.ESCALATED)
    escalations = [
        e for e in await events_of(bot.storage, number) if e.to_status.value == "escalated"
    ]
    assert len(escalations) == 2
    assert sum("[AutoFix-Conflict]" in c for c in bot.comments(number)) == 1
    assert bot.fake.count("pulls/merge") == 0


async def test_a_conflict_github_cannot_compare_says_it_could_not_tell(bot: Harness) -> None:
    number, _ = conflicting_pull(bot)
    bot.fake.inject("repos/compare-commits", status=404, body=refusal("Not Found"))
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    text = await until_comment(bot, number, "[AutoFix-Conflict]")
    assert "Could not tell which files conflict" in text
    assert "judge:merge-conflict" in bot.fake.repo(REPO).issues[number].labels


async def test_reviews_and_labels_on_a_pull_request_the_queue_cannot_move_call_nothing(
    bot: Harness,
) -> None:
    """Neither queued nor accepted at its head: the queue answers a review or a label from
    storage, with no GitHub call at all (no token, no config read, no pull request read)."""
    configure(bot, "merge:\n  require_human_approval: true\n")
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"}, branch="topic")
    number = open_pull(bot.fake, sha, branch="topic")
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.fake.merges.add_review(REPO, number, "maintainer")
    before = len(bot.fake.calls)
    # Through the endpoint: the review is the merge queue's alone.
    await bot.send("pull_request_review", review_event(bot.fake, number, "maintainer"))
    assert bot.fake.calls[before:] == []
    # The label also goes to judging's skip-label handler, so the queue's is run on its own,
    # with the app's real services.
    bot.fake.repo(REPO).issues[number].labels.append("judge:hold")
    labeled = label_event(bot.fake, "labeled", number, "judge:hold")
    context = handler_context(bot.storage, bot.app[SERVICES], "pull_request", REPO)
    await handlers.on_admission_change(
        Event(labeled, event="pull_request", delivery_id="labeled-1"), context
    )
    assert bot.fake.calls[before:] == []
    assert await events_of(bot.storage, number) == []
    # Accepted at its head, the same review lets it in. Whether the acceptance (which
    # finds the review already there) or the review's redelivery admits it depends on
    # which the workers settle first; either way it merges once.
    bot.fake.repo(REPO).issues[number].labels.remove("judge:hold")
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    await bot.send("pull_request_review", review_event(bot.fake, number, "maintainer"))
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]
