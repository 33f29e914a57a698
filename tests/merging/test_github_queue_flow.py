"""Branches that require GitHub's merge queue, end to end: webhook -> judge -> the App hands
the accepted pull request to GitHub's queue (GraphQL `enqueuePullRequest` at the judged
sha) instead of merging it, and takes it out (`dequeuePullRequest`) when the verdict at
that head stops being an accept. The fake GitHub validates every REST call against GitHub's
description and every GraphQL query against its schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import METRICS, SERVICES
from bot.github.client import GitHubApp
from bot.judging.config_store import forget_repo_config
from bot.merging.github_calls import Answer, MergeCalls
from bot.merging.github_handover import (
    RULES_FRESH,
    HandoverState,
    hand_over_refused_merge,
    handed_over,
    remember_group,
    uses_github_queue,
)
from bot.merging.step import Drop
from bot.storage.base import MergeOptions, MergeStatus, NewMergeEntry
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
    scores,
    validate_payload,
)
from tests.support.merge_helpers import (
    accepted_pull,
    check_suite_completed,
    events_of,
    fast_settings,
    label_event,
    merge_group_event,
    merge_harness,
    pr_event,
    queue_group,
    review_event,
    until_comment,
    until_status,
)

pytestmark = pytest.mark.usefixtures("fake_github")

OTHER_FILES: dict[str, str | None] = {"docs/other.md": "# Other\n\nSourced too.\n"}
QUEUE_REQUIRED = "Repository rule violations found\n\nChanges must be made through the merge queue"


@pytest.fixture
async def bot(
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


def queued(bot: Harness) -> list[int]:
    return bot.fake.merge_queue.entries(REPO, "main")


def metric(bot: Harness, name: str, **labels: str) -> float:
    value = bot.app[METRICS].registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_accepted_pull_request_is_enqueued_at_the_judged_sha_not_merged(
    bot: Harness,
) -> None:
    number, sha = await accepted_pull(bot)
    assert queued(bot) == [number]
    assert bot.fake.count("pulls/merge") == 0
    assert await bot.storage.active_merge(REPO.lower(), number) is None
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.sha == sha and record.state is HandoverState.QUEUED
    [run] = bot.check_runs(sha=sha)
    summary = run.output["summary"]
    assert "Merge queue: handed to GitHub's merge queue for `main` (next, merged in" in summary
    comment = await until_comment(bot, number, "handed to GitHub's merge queue")
    assert sha[:7] in comment
    # The rules were read once; the next accept on the branch uses the cached answer.
    assert bot.fake.count("repos/get-branch-rules") == 1
    second, _ = await accepted_pull(bot, OTHER_FILES, branch="second")
    assert queued(bot) == [number, second]
    assert bot.fake.count("repos/get-branch-rules") == 1


async def test_a_new_head_takes_it_out_of_githubs_queue(bot: Harness) -> None:
    number, sha = await accepted_pull(bot)
    assert queued(bot) == [number]
    bot.llm.script(QUICK, scores(1, 1, 1))
    bot.fake.merges.push(REPO, number, {"docs/notes.md": "# Notes\n\nthin\n"})
    await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=sha))
    assert queued(bot) == []
    assert bot.fake.merge_queue.dequeued == [number]
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.LEFT
    assert record.left_reason == "new commits pushed"


async def test_a_new_accepted_head_is_queued_again_at_its_own_sha(bot: Harness) -> None:
    number, sha = await accepted_pull(bot)
    bot.llm.script(QUICK, scores(*ACCEPT))
    new = bot.fake.merges.push(REPO, number, {"docs/more.md": "# More\n\nSourced.\n"})
    await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=sha))
    assert queued(bot) == [number]
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.sha == new and record.state is HandoverState.QUEUED


async def test_a_late_synchronize_for_an_older_head_keeps_the_newer_accepted_head(
    bot: Harness,
) -> None:
    """GitHub delivers (or redelivers) the push of B after C was accepted and queued: the
    pull request's head now, not the event's `after`, says whether the queued head is stale."""
    number, a = await accepted_pull(bot)
    bot.llm.script(QUICK, scores(*ACCEPT))
    b = bot.fake.merges.push(REPO, number, {"docs/more.md": "# More\n\nSourced.\n"})
    sync_b = pr_event(bot.fake, "synchronize", number, before=a)
    await bot.send("pull_request", sync_b)
    bot.llm.script(QUICK, scores(*ACCEPT))
    c = bot.fake.merges.push(REPO, number, {"docs/more2.md": "# More2\n\nSourced.\n"})
    await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=b))
    assert queued(bot) == [number]
    await bot.send("pull_request", sync_b)
    assert queued(bot) == [number]
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.sha == c and record.state is HandoverState.QUEUED


async def test_an_override_reject_at_the_queued_head_dequeues_it(bot: Harness) -> None:
    number, sha = await accepted_pull(bot)
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send(
        "issue_comment", comment_payload(REPO, number, "/judge override reject", "maintainer")
    )
    assert queued(bot) == []
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.LEFT
    assert record.left_reason == f"judged reject at {sha[:7]}"


async def test_the_hold_label_and_closing_take_it_out(bot: Harness) -> None:
    number, _ = await accepted_pull(bot)
    bot.fake.repo(REPO).issues[number].labels.append("judge:hold")
    await bot.send("pull_request", label_event(bot.fake, "labeled", number, "judge:hold"))
    assert queued(bot) == []
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.left_reason == "held by the `judge:hold` label"
    other, _ = await accepted_pull(bot, OTHER_FILES, branch="other")
    assert queued(bot) == [other]
    bot.fake.repo(REPO).issues[other].state = "closed"
    await bot.send("pull_request", pr_event(bot.fake, "closed", other))
    assert queued(bot) == []
    record = await handed_over(bot.storage, REPO, other)
    assert record is not None and record.left_reason == "closed"


async def test_merged_by_githubs_queue_is_counted(bot: Harness) -> None:
    number, _ = await accepted_pull(bot)
    before = metric(bot, "judge_merge_queue_merges_total", queue="github")
    bot.fake.merge_queue.drop(REPO, number)
    bot.fake.repo(REPO).pulls[number].merged = True
    bot.fake.repo(REPO).issues[number].state = "closed"
    await bot.send("pull_request", pr_event(bot.fake, "closed", number))
    assert metric(bot, "judge_merge_queue_merges_total", queue="github") == before + 1
    assert metric(bot, "judge_merge_queue_seconds_count", queue="github") == 1
    assert metric(bot, "judge_merge_queue_ci_runs_sum") == 1  # one head, judged once
    assert metric(bot, "judge_merge_queue_model_calls_sum") == 1  # the quick judge's call
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.MERGED


async def test_githubs_own_dequeue_is_recorded_with_its_reason(bot: Harness) -> None:
    number, _ = await accepted_pull(bot)
    bot.fake.merge_queue.drop(REPO, number)
    data = pr_event(bot.fake, "dequeued", number, reason="CI_FAILURE")
    validate_payload("pull_request", data)
    await bot.send("pull_request", data)
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.LEFT
    assert record.left_reason == "GitHub's merge queue: ci failure"
    # A second notice (a redelivery, GitHub's own repeat) changes nothing.
    await bot.send("pull_request", pr_event(bot.fake, "dequeued", number, reason="MANUAL"))
    again = await handed_over(bot.storage, REPO, number)
    assert again == record


async def test_a_dequeue_for_a_merged_pull_request_leaves_the_count_to_closed(
    bot: Harness,
) -> None:
    """GitHub also says "dequeued" when its queue merged the pull request: the pull
    request's `merged`, not a guess from the reason's words, says so."""
    number, _ = await accepted_pull(bot)
    bot.fake.merge_queue.drop(REPO, number)
    bot.fake.repo(REPO).pulls[number].merged = True
    bot.fake.repo(REPO).issues[number].state = "closed"
    await bot.send("pull_request", pr_event(bot.fake, "dequeued", number, reason="MANUAL"))
    still = await handed_over(bot.storage, REPO, number)
    assert still is not None and still.state is HandoverState.QUEUED


async def test_a_merge_after_githubs_dequeue_notice_is_counted(bot: Harness) -> None:
    """The `dequeued` may arrive before GitHub's pull request says merged: the record is
    left, and `closed` merged at its sha still counts GitHub's merge."""
    number, _ = await accepted_pull(bot)
    before = metric(bot, "judge_merge_queue_merges_total", queue="github")
    bot.fake.merge_queue.drop(REPO, number)
    await bot.send("pull_request", pr_event(bot.fake, "dequeued", number, reason="MERGED"))
    left = await handed_over(bot.storage, REPO, number)
    assert left is not None and left.state is HandoverState.LEFT
    bot.fake.repo(REPO).pulls[number].merged = True
    bot.fake.repo(REPO).issues[number].state = "closed"
    await bot.send("pull_request", pr_event(bot.fake, "closed", number))
    assert metric(bot, "judge_merge_queue_merges_total", queue="github") == before + 1
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.MERGED
    # A redelivered `closed` counts nothing twice.
    await bot.send("pull_request", pr_event(bot.fake, "closed", number))
    assert metric(bot, "judge_merge_queue_merges_total", queue="github") == before + 1


async def test_a_refusal_is_said_on_the_run_and_in_a_comment(bot: Harness) -> None:
    bot.fake.merge_queue.refuse_next(
        "Pull request Required workflow 'ci' is not satisfied <b>now</b>"
    )
    number, sha = await accepted_pull(bot)
    assert queued(bot) == []
    [run] = bot.check_runs(sha=sha)
    assert (
        "Merge queue: GitHub's merge queue for `main` did not take it: Pull request Required "
        "workflow 'ci' is not satisfied" in run.output["summary"]
    )
    assert "<b>" not in run.output["summary"]
    comment = await until_comment(bot, number, "[Merge-Failed]")
    assert "did not take it" in comment
    assert await handed_over(bot.storage, REPO, number) is None


async def test_a_head_that_moved_before_the_enqueue_is_left_to_its_judgment(
    bot: Harness,
) -> None:
    bot.fake.merge_queue.refuse_next("Pull request head sha does not match the expected head oid")
    number, sha = await accepted_pull(bot)
    assert queued(bot) == []
    [run] = bot.check_runs(sha=sha)
    assert "Merge queue" not in run.output["summary"]
    assert not any("[Merge-Failed]" in c for c in bot.comments(number))


async def cache_rules(bot: Harness, merge_queue: bool) -> None:
    """What the App last read of main's rules, as if just now."""
    checked = datetime.now(UTC).isoformat()
    await bot.storage.kv_put(
        "branch-rules",
        f"{REPO.lower()}:main",
        {"merge_queue": merge_queue, "checked_at": checked},
    )


async def test_a_branch_github_says_has_no_queue_goes_to_the_apps_queue(bot: Harness) -> None:
    """The cached rules say merge queue, but the rule is gone and GitHub's queue says so:
    the App's own queue merges it, and the branch is remembered as having none."""
    bot.fake.merge_queue.disable(REPO, "main")
    await cache_rules(bot, True)
    number, sha = await accepted_pull(bot)
    await until_status(bot, number, MergeStatus.MERGED)
    assert bot.fake.merges.merged == [(number, sha, "merge")]
    assert queued(bot) == []
    cached = await bot.storage.kv_get("branch-rules", f"{REPO.lower()}:main")
    assert cached is not None and cached["merge_queue"] is False


async def test_a_rule_added_since_the_rules_were_read_is_found_by_the_405(
    bot: Harness,
) -> None:
    """The App read main's rules before the merge queue was required: its own queue takes
    the pull request, GitHub refuses the merge (405 "must be made through the merge
    queue"), and the pull request goes to GitHub's queue at the judged sha instead of
    spending attempts."""
    await cache_rules(bot, False)
    number, sha = await accepted_pull(bot)
    await until_status(bot, number, MergeStatus.DROPPED)
    assert queued(bot) == [number]
    [last] = (await events_of(bot.storage, number))[-1:]
    assert last.reason == (
        f"handed to GitHub's merge queue for `main` at {sha[:7]} (the branch merges only "
        "through it)"
    )
    assert bot.fake.count("pulls/merge") == 1
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.sha == sha and record.actor == "merge queue"


async def test_branch_rules_are_read_again_when_stale(bot: Harness) -> None:
    calls = await merge_calls(bot)
    now = datetime.now(UTC)
    bot.fake.merge_queue.disable(REPO, "release")
    assert not await uses_github_queue(bot.storage, calls, "release", now)
    bot.fake.merge_queue.enable(REPO, "release")
    assert not await uses_github_queue(bot.storage, calls, "release", now + timedelta(minutes=1))
    assert await uses_github_queue(bot.storage, calls, "release", now + RULES_FRESH)
    assert await uses_github_queue(bot.storage, calls, "release", now, refresh=True)
    assert bot.fake.count("repos/get-branch-rules") == 3


async def merge_calls(bot: Harness) -> MergeCalls:
    client = await bot.app[SERVICES].services.github.installation_client(1)
    return MergeCalls(client, REPO)


async def test_a_405_that_needs_the_merge_queue_hands_the_entry_over(bot: Harness) -> None:
    """The App's queue held the pull request (the rule came later); GitHub refuses the
    merge with 405: the rules are read again and GitHub's queue takes it at the judged
    sha. Any other 405 is left to the queue's own attempts."""
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"})
    number = open_pull(bot.fake, sha)
    calls = await merge_calls(bot)
    now = datetime.now(UTC)
    entry = await bot.storage.enqueue_merge(
        NewMergeEntry(REPO.lower(), "main", number, 1, sha, "merge", MergeOptions()),
        actor="judge",
        reason="accepted",
        now=now,
    )
    other = Answer(405, "Pull Request is not mergeable")
    assert await hand_over_refused_merge(calls, bot.storage, entry, other, now) is None
    assert bot.fake.count("repos/get-branch-rules") == 0
    bot.fake.merge_queue.disable(REPO, "main")
    refused = Answer(405, QUEUE_REQUIRED)
    assert await hand_over_refused_merge(calls, bot.storage, entry, refused, now) is None
    bot.fake.merge_queue.enable(REPO, "main")
    outcome = await hand_over_refused_merge(calls, bot.storage, entry, refused, now)
    assert isinstance(outcome, Drop)
    assert outcome.reason.startswith("handed to GitHub's merge queue for `main`")
    assert queued(bot) == [number]
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.sha == sha
    bot.fake.merge_queue.drop(REPO, number)
    bot.fake.merge_queue.refuse_next("Pull request is not mergeable: it has merge conflicts")
    assert await hand_over_refused_merge(calls, bot.storage, entry, refused, now) is None


async def test_human_approval_then_a_second_look_keeps_its_place(bot: Harness) -> None:
    """`merge.require_human_approval` applies on GitHub's queue too: handed over only once
    someone entitled approves the head; another look at the same head leaves it where it is."""
    bot.fake.add_commit(
        REPO,
        {".github/judge.yml": "merge:\n  require_human_approval: true\n"},
        message="Configure",
        branch="main",
    )
    number, sha = await accepted_pull(bot)
    assert queued(bot) == []
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.fake.merges.add_review(REPO, number, "maintainer")
    await bot.send("pull_request_review", review_event(bot.fake, number, "maintainer"))
    assert queued(bot) == [number]
    enqueues = bot.fake.count("graphql")
    await bot.send("pull_request_review", review_event(bot.fake, number, "maintainer"))
    assert queued(bot) == [number]
    assert bot.fake.count("graphql") == enqueues  # no second enqueue, no dequeue
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.sha == sha


@pytest.mark.parametrize(
    "judge_yml",
    ["merge:\n  enabled: false\n  hold_label: stop\n", "paths: [\n"],
    ids=["merging-turned-off", "invalid-config"],
)
async def test_the_hold_label_takes_it_out_after_merging_went_off(
    bot: Harness, judge_yml: str
) -> None:
    """Handed over, then merging turned off (or judge.yml broken): the hold label still
    takes it out of GitHub's queue, as nothing else would."""
    number, _ = await accepted_pull(bot)
    bot.fake.add_commit(REPO, {".github/judge.yml": judge_yml}, message="Configure", branch="main")
    await forget_repo_config(bot.storage, REPO)  # as the push of the file does
    hold = "stop" if "stop" in judge_yml else "judge:hold"
    bot.fake.repo(REPO).issues[number].labels.append("other")
    await bot.send("pull_request", label_event(bot.fake, "labeled", number, "other"))
    assert queued(bot) == [number]
    bot.fake.repo(REPO).issues[number].labels.append(hold)
    await bot.send("pull_request", label_event(bot.fake, "labeled", number, hold))
    assert queued(bot) == []
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.LEFT
    assert record.left_reason == f"held by the `{hold}` label"


async def test_the_hold_label_off_hands_it_over_again(bot: Harness) -> None:
    number, sha = await accepted_pull(bot)
    issue = bot.fake.repo(REPO).issues[number]
    issue.labels.append("judge:hold")
    await bot.send("pull_request", label_event(bot.fake, "labeled", number, "judge:hold"))
    assert queued(bot) == []
    issue.labels.remove("judge:hold")
    await bot.send("pull_request", label_event(bot.fake, "unlabeled", number, "judge:hold"))
    assert queued(bot) == [number]
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.QUEUED and record.sha == sha


async def test_a_reject_while_a_group_holds_the_pull_fails_the_group_and_retries(
    bot: Harness,
) -> None:
    """GitHub refuses the take-out while the entry is locked in a group being tested, and
    the group's run passed on the accept: the reject fails the group's run (GitHub's queue
    drops the group), and the take-out goes again once the group is destroyed."""
    number, sha = await accepted_pull(bot)
    head = queue_group(bot.fake, number)
    await bot.send("merge_group", merge_group_event(bot.fake, "checks_requested", number, head))
    [run] = bot.check_runs(sha=head)
    assert run.conclusion == "success"
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.fake.merge_queue.refuse_next("Pull request is locked by the merge queue")
    await bot.send(
        "issue_comment", comment_payload(REPO, number, "/judge override reject", "maintainer")
    )
    [run] = bot.check_runs(sha=head)
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert f"#{number} is reject at the merged head" in run.output["title"]
    assert queued(bot) == [number]
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.QUEUED
    assert record.pending_out == f"judged reject at {sha[:7]}"
    # Checks finishing elsewhere while GitHub still refuses: still pending.
    bot.fake.merge_queue.refuse_next("Pull request is locked by the merge queue")
    await bot.send("check_suite", check_suite_completed(bot.fake, sha))
    assert queued(bot) == [number]
    destroyed = merge_group_event(bot.fake, "destroyed", number, head, "dequeued")
    await bot.send("merge_group", destroyed)
    assert queued(bot) == []
    record = await handed_over(bot.storage, REPO, number)
    assert record is not None and record.state is HandoverState.LEFT
    assert (record.left_reason, record.pending_out) == (f"judged reject at {sha[:7]}", "")


async def test_a_reject_at_a_head_no_group_holds_leaves_other_groups_alone(
    bot: Harness,
) -> None:
    number, _ = await accepted_pull(bot)
    head = queue_group(bot.fake, number)
    await bot.send("merge_group", merge_group_event(bot.fake, "checks_requested", number, head))
    other, other_sha = await accepted_pull(bot, OTHER_FILES, branch="second")
    # A group GitHub built for the other pull request whose run is not there yet: its
    # checks, when requested, read the reject (`decide_group`).
    await remember_group(bot.storage, REPO, "f" * 40, [(other, other_sha)], datetime.now(UTC))
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send(
        "issue_comment", comment_payload(REPO, other, "/judge override reject", "maintainer")
    )
    assert [run.conclusion for run in bot.check_runs(sha=head)] == ["success"]
    assert queued(bot) == [number]


async def test_an_apps_queue_entry_moves_to_githubs_queue(bot: Harness) -> None:
    """Queued in the App's queue while the App read no merge queue on main; once it reads
    one (the cache ran out), the next accept of that head moves the entry over."""
    await cache_rules(bot, False)
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"})
    number = open_pull(bot.fake, sha)
    bot.fake.repo(REPO).pulls[number].checks_pending = True  # the App's queue waits
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pr_event(bot.fake, "opened", number))
    assert await bot.storage.active_merge(REPO.lower(), number) is not None
    await cache_rules(bot, True)
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("issue_comment", comment_payload(REPO, number, "/judge rerun", "maintainer"))
    assert await bot.storage.active_merge(REPO.lower(), number) is None
    [last] = (await events_of(bot.storage, number))[-1:]
    assert last.reason == "`main` merges through GitHub's merge queue"
    assert queued(bot) == [number]
