"""Merge on approve end to end: webhook -> judge -> queue -> worker -> the fake GitHub.

Every GitHub request and answer is validated against GitHub's REST description by the
fake, every webhook payload against the webhook schemas.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.storage.base import MergeStatus
from tests.support.fakes.github_http import DOCS
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    QUICK,
    REJECT,
    REPO,
    Harness,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    rejected_pull,
    scores,
)
from tests.support.merge_helpers import (
    accepted_pull,
    check_suite_completed,
    events_of,
    fast_settings,
    label_event,
    merge_harness,
    pr_event,
    review_event,
    status_event,
    until_comment,
    until_status,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("fake_github")


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


async def test_accepted_pull_request_is_merged_at_the_judged_sha(bot: Harness) -> None:
    """The judge's accept queues the pull request; the worker merges exactly that sha."""
    number, sha = await accepted_pull(bot)
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]
    pull = bot.fake.repo(REPO).pulls[number]
    assert pull.merged
    [run] = bot.check_runs(sha=sha)
    assert "Merge queue: next for `main`" in run.output["summary"]
    await until_comment(bot, number, f"Merged {sha[:7]}, the judged commit")
    assert any("queued to merge into `main`" in c for c in bot.comments(number))
    statuses = [(e.from_status, e.to_status) for e in await events_of(bot.storage, number)]
    assert statuses == [
        (None, MergeStatus.PENDING),
        (MergeStatus.PENDING, MergeStatus.PROCESSING),
        (MergeStatus.PROCESSING, MergeStatus.MERGED),
    ]


@pytest.fixture
def make_bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> Any:
    """The bot with merge settings of the test's own (a long retry delay proves that a
    GitHub event, not the timer, moved the queue)."""

    def build(**settings: Any) -> Any:
        return merge_harness(
            tmp_path,
            github_keypair.private_pem,
            fake_github,
            github_app,
            fake_llm,
            fast_settings(**settings),
        )

    return build


SLOW_TIMER = {"merge_queue_retry_delay_ms": 600_000}


def pull_of(bot: Harness, number: int) -> Any:
    return bot.fake.repo(REPO).pulls[number]


async def test_blocked_pull_request_waits_for_checks_and_merges_on_the_event(
    make_bot: Any,
) -> None:
    """Required checks pending: no merge call; a `check_suite` completed event (not the
    timer, an hour away) merges it, with one merge call in all."""
    async with make_bot(**SLOW_TIMER) as bot:
        bot.fake.merges.unknown_reads_after_push = 0
        sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"})
        number = open_pull(bot.fake, sha)
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await wait_for(lambda: bot.fake.count("pulls/get") >= 2, what="the first step")
        await until_status(bot, number, MergeStatus.PENDING)
        assert bot.fake.count("pulls/merge") == 0
        pull_of(bot, number).checks_pending = False
        await bot.send("check_suite", check_suite_completed(bot.fake, sha))
        await until_status(bot, number, MergeStatus.MERGED)
        assert bot.fake.merges.merged == [(number, sha, "merge")]
        assert bot.fake.count("pulls/merge") == 1


async def test_a_commit_status_event_merges_a_blocked_pull_request(make_bot: Any) -> None:
    """A required status (not a check run) turning green arrives as `status`; it moves the
    queue like `check_suite` does, with the timer an hour away."""
    async with make_bot(**SLOW_TIMER) as bot:
        number, sha = commit_and_open(bot)
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        await bot.send("status", status_event(bot.fake, sha, "pending"))
        await wait_for(lambda: bot.fake.count("pulls/get") >= 3, what="the nudged step")
        await until_status(bot, number, MergeStatus.PENDING)
        assert bot.fake.count("pulls/merge") == 0
        pull_of(bot, number).checks_pending = False
        await bot.send("status", status_event(bot.fake, sha))
        await until_status(bot, number, MergeStatus.MERGED)
        assert bot.fake.merges.merged == [(number, sha, "merge")]


async def test_405_waits_and_a_check_suite_event_merges(make_bot: Any) -> None:
    """GitHub refuses once (405); the next attempt comes with the next GitHub event."""
    async with make_bot(**SLOW_TIMER) as bot:
        bot.fake.inject("pulls/merge", status=405, body=not_mergeable())
        number, sha = await accepted_pull(bot)
        await wait_for(lambda: bot.fake.count("pulls/merge") == 1, what="the refused merge")
        await until_status(bot, number, MergeStatus.PENDING)
        await bot.send("check_suite", check_suite_completed(bot.fake, sha))
        await until_status(bot, number, MergeStatus.MERGED)
        assert bot.fake.merges.merged == [(number, sha, "merge")]


async def test_405_until_exhaustion_escalates_to_a_person(make_bot: Any) -> None:
    """Attempts used up: label `judge:merge-failed`, a comment saying what failed."""
    async with make_bot(merge_queue_max_attempts=3) as bot:
        bot.fake.inject("pulls/merge", status=405, body=not_mergeable(), times=3)
        number, _ = await accepted_pull(bot)
        await until_status(bot, number, MergeStatus.ESCALATED)
        text = await until_comment(bot, number, "[Merge-Failed]")
        assert "not merged after 3 attempts" in text
        assert "Pull Request is not mergeable" in text
        assert "judge:merge-failed" in bot.fake.repo(REPO).issues[number].labels
        assert bot.fake.count("pulls/merge") == 3
        assert not pull_of(bot, number).merged


async def test_409_head_moved_drops_the_entry(bot: Harness) -> None:
    bot.fake.inject("pulls/merge", status=409, body=head_modified())
    number, _ = await accepted_pull(bot)
    await until_status(bot, number, MergeStatus.DROPPED)
    [last] = (await events_of(bot.storage, number))[-1:]
    assert "head branch moved" in last.reason
    assert not pull_of(bot, number).merged


async def test_mergeable_null_is_read_again_then_merged(bot: Harness) -> None:
    number, sha = commit_and_open(bot)
    pull_of(bot, number).unknown_reads = 3  # the judge's read takes one
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    await until_status(bot, number, MergeStatus.MERGED)
    reasons = [e.reason for e in await events_of(bot.storage, number)]
    assert reasons.count("GitHub is still computing whether it can merge") == 2
    assert bot.fake.merges.merged == [(number, sha, "merge")]


async def test_conflict_escalates_with_the_conflict_label(bot: Harness) -> None:
    number, _ = commit_and_open(bot)
    pull_of(bot, number).conflict = True
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    await until_status(bot, number, MergeStatus.ESCALATED)
    text = await until_comment(bot, number, "[AutoFix-Conflict]")
    assert "conflicts with `main`" in text
    assert "judge:merge-conflict" in bot.fake.repo(REPO).issues[number].labels
    assert bot.fake.count("pulls/merge") == 0


async def test_push_after_acceptance_is_judged_again_and_merged_at_the_new_head(
    make_bot: Any,
) -> None:
    """The old sha is never merged: the push takes the entry out, the new head's accept
    queues it again, and the merge carries the new sha."""
    async with make_bot(**SLOW_TIMER) as bot:
        number, old = commit_and_open(bot)
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        new = bot.fake.merges.push(REPO, number, {"docs/more.md": "# More\n\nSourced.\n"})
        pull_of(bot, number).checks_pending = False
        await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=old))
        await until_status(bot, number, MergeStatus.MERGED)
        assert bot.fake.merges.merged == [(number, new, "merge")]
        reasons = [e.reason for e in await events_of(bot.storage, number)]
        assert "new commits accepted; queued again at the back" in reasons


async def test_behind_branch_is_updated_judged_again_then_merged(bot: Harness) -> None:
    """The base requires an up-to-date branch: update-branch, then the new head is judged
    before the merge, which carries the new head's sha."""
    number, _ = commit_and_open(bot)
    bot.fake.add_commit(REPO, {"CHANGELOG.md": "moved on\n"}, branch="main")
    pull_of(bot, number).strict = True
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    await wait_for(lambda: bool(bot.fake.merges.updates), what="update-branch")
    [update] = bot.fake.merges.updates
    assert bot.fake.count("pulls/merge") == 0
    await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=update.before))
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, update.after, "merge")]
    [run] = bot.check_runs(sha=update.after)
    assert run.conclusion == "success"


async def test_hold_label_keeps_it_out_until_removed(bot: Harness) -> None:
    number, sha = await accepted_pull(bot, labels=("judge:hold",))
    assert await bot.storage.active_merge(REPO.lower(), number) is None
    assert bot.fake.count("pulls/merge") == 0
    issue = bot.fake.repo(REPO).issues[number]
    issue.labels.remove("judge:hold")
    await bot.send("pull_request", label_event(bot.fake, "unlabeled", number, "judge:hold"))
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]


async def test_hold_label_added_takes_it_out_of_the_queue(make_bot: Any) -> None:
    async with make_bot(**SLOW_TIMER) as bot:
        number, _ = commit_and_open(bot)
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        bot.fake.repo(REPO).issues[number].labels.append("judge:hold")
        await bot.send("pull_request", label_event(bot.fake, "labeled", number, "judge:hold"))
        await until_status(bot, number, MergeStatus.DROPPED)
        [last] = (await events_of(bot.storage, number))[-1:]
        assert last.reason == "held by the `judge:hold` label"


async def test_human_approval_required_waits_for_an_approving_review(bot: Harness) -> None:
    bot.fake.add_commit(
        REPO,
        {".github/judge.yml": "merge:\n  require_human_approval: true\n"},
        message="Configure",
        branch="main",
    )
    number, sha = await accepted_pull(bot)
    assert await bot.storage.active_merge(REPO.lower(), number) is None
    bot.fake.set_permission(REPO, "agent", "write")
    bot.fake.merges.add_review(REPO, number, "agent")  # the author's own: not enough
    await bot.send("pull_request_review", review_event(bot.fake, number, "agent"))
    assert await bot.storage.active_merge(REPO.lower(), number) is None
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.fake.merges.add_review(REPO, number, "maintainer")
    await bot.send("pull_request_review", review_event(bot.fake, number, "maintainer"))
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]


async def test_skipped_and_undetermined_runs_are_never_merged(bot: Harness) -> None:
    skipped, _ = commit_and_open(bot, branch="skip", labels=("judge-skip",))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", skipped))
    bot.llm.script(QUICK, Reply.server_error(), Reply.server_error())
    outage, sha = commit_and_open(bot, branch="outage")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", outage))
    assert "undetermined" in bot.check_runs(sha=sha)[0].output["title"]
    for number in (skipped, outage):
        assert await bot.storage.active_merge(REPO.lower(), number) is None
        assert await events_of(bot.storage, number) == []
    assert bot.fake.count("pulls/merge") == 0


async def test_override_accept_is_an_approval(bot: Harness) -> None:
    number, sha = await rejected_pull(bot)
    assert await bot.storage.active_merge(REPO.lower(), number) is None
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send(
        "issue_comment", comment_payload(REPO, number, "/judge override accept", "maintainer")
    )
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]
    [run] = bot.check_runs(sha=sha)
    assert "Merge queue: next" in run.output["summary"]


async def test_closing_takes_it_out_and_merging_off_queues_nothing(make_bot: Any) -> None:
    async with make_bot(merge_on_approve=False) as bot:
        number, _ = await accepted_pull(bot)
        assert await events_of(bot.storage, number) == []
    async with make_bot(**SLOW_TIMER) as bot:
        number, _ = commit_and_open(bot, branch="closing")
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        bot.fake.repo(REPO).issues[number].state = "closed"
        await bot.send("pull_request", pr_event(bot.fake, "closed", number))
        await until_status(bot, number, MergeStatus.DROPPED)


async def test_reopening_at_an_accepted_head_queues_it_again(make_bot: Any) -> None:
    """Closed while queued, reopened at the same head: the head was judged by another
    delivery, and the queue takes it again without asking a model."""
    async with make_bot(**SLOW_TIMER) as bot:
        number, sha = commit_and_open(bot, branch="reopened")
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        bot.fake.repo(REPO).issues[number].state = "closed"
        await bot.send("pull_request", pr_event(bot.fake, "closed", number))
        await until_status(bot, number, MergeStatus.DROPPED)
        calls = len(bot.llm.requests)
        bot.fake.repo(REPO).issues[number].state = "open"
        await bot.send("pull_request", pr_event(bot.fake, "reopened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        assert len(bot.llm.requests) == calls, "the verdict came from the cache"
        [run] = bot.check_runs(sha=sha)
        assert run.conclusion == "success"


def commit_and_open(bot: Harness, *, branch: str = "feature", **pull: Any) -> tuple[int, str]:
    text = f"# Notes on {branch}\n\nSourced.\n"
    sha = commit_files(bot.fake, {"docs/notes.md": text}, branch=branch)
    return open_pull(bot.fake, sha, branch=branch, **pull), sha


def not_mergeable() -> dict[str, str]:
    return {"message": "Pull Request is not mergeable", "documentation_url": DOCS}


def head_modified() -> dict[str, str]:
    return {
        "message": "Head branch was modified. Review and try the merge again.",
        "documentation_url": DOCS,
    }


async def test_push_judged_reject_leaves_the_queue(make_bot: Any) -> None:
    """The new head is not accepted: the pull request leaves and nothing is merged."""
    async with make_bot(**SLOW_TIMER) as bot:
        number, old = commit_and_open(bot)
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        bot.llm.script(QUICK, scores(*REJECT))
        bot.llm.script(DEEP, scores(*REJECT))
        bot.fake.merges.push(REPO, number, {"docs/more.md": "# More\n\nthin\n"})
        await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=old))
        await until_status(bot, number, MergeStatus.DROPPED)
        [last] = (await events_of(bot.storage, number))[-1:]
        assert last.reason == "new commits pushed"
        assert bot.fake.count("pulls/merge") == 0


async def test_other_labels_and_reviews_only_nudge(bot: Harness) -> None:
    number, sha = await accepted_pull(bot, labels=("docs",))
    await until_status(bot, number, MergeStatus.MERGED)
    await bot.send("pull_request", label_event(bot.fake, "unlabeled", number, "docs"))
    await bot.send("pull_request_review", review_event(bot.fake, number, "maintainer"))
    assert bot.fake.merges.merged == [(number, sha, "merge")]


async def test_held_while_its_merge_is_in_flight(make_bot: Any) -> None:
    """GitHub merges what was sent; the worker finds the entry gone and records nothing
    over the person's decision."""
    async with make_bot(**SLOW_TIMER) as bot:
        number, sha = commit_and_open(bot)
        pull_of(bot, number).checks_pending = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.PENDING)
        pull_of(bot, number).checks_pending = False
        bot.fake.hold("pulls/merge")
        await bot.send("check_suite", check_suite_completed(bot.fake, sha))
        await wait_for(bot.fake.held.is_set, what="the merge in flight")
        bot.fake.repo(REPO).issues[number].labels.append("judge:hold")
        await bot.send("pull_request", label_event(bot.fake, "labeled", number, "judge:hold"))
        bot.fake.release()
        await wait_for(lambda: bool(bot.fake.merges.merged), what="the merge")
        await until_status(bot, number, MergeStatus.DROPPED)
        assert not any("the judged commit" in c for c in bot.comments(number))
