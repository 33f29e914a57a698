"""`/judge merge --priority` end to end: who may set it, what it does to the App's merge
queue (the order GitHub sees merges in), what it says, and what it records."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.storage.base import MergeEntry, MergePriority, MergeStatus
from bot.storage.sqlite import SqliteStorage
from tests.commands.written import comment_now
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    IMPROVE,
    QUICK,
    REPO,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    rejected_pull,
    scores,
)
from tests.support.merge_helpers import (
    check_suite_completed,
    events_of,
    fast_settings,
    merge_harness,
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
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        # The blocked head waits as long as the test needs.
        fast_settings(merge_queue_max_attempts=1000),
    ) as h:
        yield h


async def three_queued_first_blocked(bot: Harness) -> tuple[int, int, int]:
    numbers = []
    for index in range(3):
        bot.llm.script(QUICK, scores(*ACCEPT))
        branch = f"topic-{index}"
        sha = commit_files(bot.fake, {f"docs/n{index}.md": f"# N{index}\n\nok\n"}, branch=branch)
        number = open_pull(bot.fake, sha, branch=branch)
        # The first one's required check is still running: it holds the queue.
        bot.fake.repo(REPO).pulls[number].checks_pending = index == 0
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        numbers.append(number)
    for number in numbers:

        async def queued(number: int = number) -> bool:
            return await bot.storage.active_merge(REPO.lower(), number) is not None

        await wait_for(queued)
    return numbers[0], numbers[1], numbers[2]


async def test_urgent_from_a_maintainer_goes_first_and_is_recorded(bot: Harness) -> None:
    first, second, third = await three_queued_first_blocked(bot)
    bot.fake.set_permission(REPO, "lead", "maintain")
    await bot.send(
        "issue_comment", comment_now(REPO, third, "/judge merge --priority urgent", "lead")
    )
    reply = await until_comment(bot, third, "merge priority")
    assert "@lead set this pull request's merge priority to **urgent**" in reply
    await until_status(bot, third, MergeStatus.MERGED)
    blocked = bot.fake.repo(REPO).pulls[first]
    blocked.checks_pending = False
    await bot.send("check_suite", check_suite_completed(bot.fake, blocked.head_sha))
    await until_status(bot, second, MergeStatus.MERGED)
    assert [number for number, _, _ in bot.fake.merges.merged] == [third, first, second]
    reasons = [event.reason for event in await events_of(bot.storage, third)]
    assert "priority urgent, set by @lead" in reasons
    entries = await bot.storage.list_merge_events(REPO.lower(), third)
    assert any(event.actor == "lead" for event in entries)


async def test_the_author_may_not_set_a_priority(bot: Harness) -> None:
    _, _, third = await three_queued_first_blocked(bot)
    bot.fake.set_permission(REPO, "agent", "admin")
    await bot.send(
        "issue_comment", comment_now(REPO, third, "/judge merge --priority=high", "agent")
    )
    reply = await until_comment(bot, third, "did not run")
    assert "author" in reply
    entry = await bot.storage.active_merge(REPO.lower(), third)
    assert entry is not None and entry.priority is MergePriority.NORMAL


async def test_on_an_old_disagreement_issue_the_people_of_the_current_head_count(
    bot: Harness,
) -> None:
    """The issue names the head it was opened about; a priority is about the head the queue
    holds now, so a committer of that newer head may not reorder it from the old issue."""
    bot.llm.script(QUICK, scores(*IMPROVE))
    bot.llm.script(DEEP, scores(*IMPROVE))
    first = commit_files(bot.fake, {"docs/notes.md": "# Notes\n"})
    number = open_pull(bot.fake, first)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [issue] = bot.issues()
    pull = bot.fake.repo(REPO).pulls[number]
    pull.checks_pending = True  # nothing merges while the test looks
    # A maintainer's accept closes the issue: it stays about the first head.
    bot.fake.set_permission(REPO, "lead", "maintain")
    await bot.send("issue_comment", comment_now(REPO, number, "/judge override accept", "lead"))
    await until_comment(bot, issue.number, "Closing")
    bot.llm.script(QUICK, scores(*ACCEPT))
    second = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC}, author="helper")
    pull.head_sha = second
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))

    async def queued() -> bool:
        entry = await bot.storage.active_merge(REPO.lower(), number)
        return entry is not None and entry.judged_sha == second

    await wait_for(queued)
    bot.fake.set_permission(REPO, "helper", "write")
    command = "/judge merge --priority urgent"
    await bot.send(
        "issue_comment", comment_now(REPO, issue.number, command, "helper", on_pull=False)
    )
    reply = await until_comment(bot, issue.number, "did not run")
    assert reply.startswith("@helper") and "four eyes" in reply
    entry = await bot.storage.active_merge(REPO.lower(), number)
    assert entry is not None and entry.priority is MergePriority.NORMAL


class MergedMeanwhile(SqliteStorage):
    """Another replica merges the pull request right after its priority is recorded."""

    async def set_merge_priority(
        self,
        repository: str,
        pull_number: int,
        priority: MergePriority,
        *,
        actor: str,
        now: datetime,
    ) -> MergeEntry | None:
        entry = await super().set_merge_priority(
            repository, pull_number, priority, actor=actor, now=now
        )
        merged = MergeStatus.MERGED
        await self.leave_merge_queue(
            repository, pull_number, status=merged, actor="replica-2", reason="merged", now=now
        )
        return entry


async def test_a_pull_request_merged_while_its_priority_is_set_is_answered(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> None:
    storage = MergedMeanwhile(str(tmp_path / "raced.sqlite3"))
    settings = fast_settings(merge_queue_max_attempts=1000)
    pem = github_keypair.private_pem
    async with merge_harness(
        tmp_path, pem, fake_github, github_app, fake_llm, settings, storage=storage
    ) as bot:
        _, _, third = await three_queued_first_blocked(bot)
        bot.fake.set_permission(REPO, "lead", "write")
        delivery_id = await bot.send(
            "issue_comment", comment_now(REPO, third, "/judge merge --priority high", "lead")
        )
        reply = await until_comment(bot, third, "not in the merge queue")
        delivery = await bot.storage.get_delivery(delivery_id)
    assert reply.startswith("@lead") and "Nothing was changed" in reply
    # Answered at once, not by a retry after the first attempt failed.
    assert delivery is not None and (delivery.attempts, delivery.last_error) == (1, None)


async def test_a_reader_may_not_set_a_priority(bot: Harness) -> None:
    _, _, third = await three_queued_first_blocked(bot)
    bot.fake.set_permission(REPO, "reader", "read")
    await bot.send(
        "issue_comment", comment_now(REPO, third, "/judge merge --priority urgent", "reader")
    )
    await until_comment(bot, third, "did not run")
    entry = await bot.storage.active_merge(REPO.lower(), third)
    assert entry is not None and entry.priority_by is None


async def test_a_pull_request_in_no_queue_is_told_so(bot: Harness) -> None:
    number, _ = await rejected_pull(bot)
    bot.fake.set_permission(REPO, "lead", "write")
    await bot.send(
        "issue_comment", comment_now(REPO, number, "/judge merge --priority high", "lead")
    )
    reply = await until_comment(bot, number, "not in the merge queue")
    assert "Nothing was changed" in reply


async def test_a_closed_pull_request_takes_no_priority(bot: Harness) -> None:
    number, _ = await rejected_pull(bot)
    bot.fake.repo(REPO).issues[number].state = "closed"
    bot.fake.set_permission(REPO, "lead", "write")
    await bot.send(
        "issue_comment", comment_now(REPO, number, "/judge merge --priority high", "lead")
    )
    await until_comment(bot, number, "a merge priority is for an open pull request")


async def test_merge_without_a_priority_is_answered_with_help(bot: Harness) -> None:
    number, _ = await rejected_pull(bot)
    await bot.send("issue_comment", comment_now(REPO, number, "/judge merge", "lead"))
    reply = await until_comment(bot, number, "I did not understand")
    assert "merge needs `--priority`" in reply


async def test_back_to_normal_keeps_who_and_when(bot: Harness) -> None:
    _, second, third = await three_queued_first_blocked(bot)
    for number in (second, third):  # so that none merges while the test looks
        bot.fake.repo(REPO).pulls[number].checks_pending = True
    bot.fake.set_permission(REPO, "lead", "write")
    for level in ("high", "normal"):
        await bot.send(
            "issue_comment", comment_now(REPO, third, f"/judge merge --priority {level}", "lead")
        )

        async def recorded(level: str = level) -> bool:
            entry = await bot.storage.active_merge(REPO.lower(), third)
            return entry is not None and entry.priority.value == level

        await wait_for(recorded)
    queue = await bot.storage.merge_queue(REPO.lower(), "main")
    assert [entry.pull_number for entry in queue][1:] == [second, third]
    assert queue[-1].priority_by == "lead" and queue[-1].priority_at is not None


@pytest.fixture
async def github_queue_bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    fake_github.merge_queue.enable(REPO, "main")
    async with merge_harness(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, fast_settings()
    ) as h:
        yield h


async def handed_to_github(bot: Harness, count: int) -> list[int]:
    numbers = []
    for index in range(count):
        bot.llm.script(QUICK, scores(*ACCEPT))
        branch = f"topic-{index}"
        sha = commit_files(bot.fake, {f"docs/g{index}.md": f"# G{index}\n\nok\n"}, branch=branch)
        number = open_pull(bot.fake, sha, branch=branch)
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        numbers.append(number)
    await wait_for(lambda: bot.fake.merge_queue.entries(REPO, "main") == numbers)
    return numbers


async def test_urgent_on_githubs_queue_jumps(github_queue_bot: Harness) -> None:
    bot = github_queue_bot
    first, second = await handed_to_github(bot, 2)
    bot.fake.set_permission(REPO, "lead", "maintain")
    await bot.send(
        "issue_comment", comment_now(REPO, second, "/judge merge --priority urgent", "lead")
    )
    reply = await until_comment(bot, second, "front of GitHub's merge queue")
    assert reply.startswith("@lead put this pull request")
    assert bot.fake.merge_queue.entries(REPO, "main") == [second, first]
    assert await bot.storage.active_merge(REPO.lower(), second) is None


async def test_high_on_githubs_queue_changes_nothing_and_says_why(
    github_queue_bot: Harness,
) -> None:
    bot = github_queue_bot
    first, second = await handed_to_github(bot, 2)
    bot.fake.set_permission(REPO, "lead", "maintain")
    await bot.send(
        "issue_comment", comment_now(REPO, second, "/judge merge --priority high", "lead")
    )
    reply = await until_comment(bot, second, "no priority levels")
    assert "only `urgent` jumps ahead" in reply
    assert bot.fake.merge_queue.entries(REPO, "main") == [first, second]


async def test_a_jump_github_refuses_is_reported(github_queue_bot: Harness) -> None:
    bot = github_queue_bot
    _, second = await handed_to_github(bot, 2)
    bot.fake.set_permission(REPO, "lead", "maintain")
    # The head moved on GitHub after the App handed the pull request over (the push's
    # webhook not yet here): the re-queue at the judged sha is refused.
    moved = commit_files(bot.fake, {"docs/g1.md": "# G1\n\nchanged\n"}, branch="topic-1")
    bot.fake.repo(REPO).pulls[second].head_sha = moved
    await bot.send(
        "issue_comment", comment_now(REPO, second, "/judge merge --priority urgent", "lead")
    )
    reply = await until_comment(bot, second, "refused the jump")
    assert "expected head oid" in reply
    assert "out of GitHub's queue" in reply


async def test_a_dequeue_github_refuses_keeps_the_pull_request_where_it_is(
    github_queue_bot: Harness,
) -> None:
    bot = github_queue_bot
    first, second = await handed_to_github(bot, 2)
    bot.fake.set_permission(REPO, "lead", "maintain")
    bot.fake.merge_queue.refuse_next("Resource not accessible by integration")
    await bot.send(
        "issue_comment", comment_now(REPO, second, "/judge merge --priority urgent", "lead")
    )
    reply = await until_comment(bot, second, "refused the jump")
    assert "Resource not accessible by integration" in reply
    assert "out of GitHub's queue" not in reply
    assert bot.fake.merge_queue.entries(REPO, "main") == [first, second]
