"""Failure, retry and abuse paths of the flows, end to end (found in review)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from bot.storage.base import DeliveryStatus
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    IMPROVE,
    QUICK,
    REJECT,
    REPO,
    Harness,
    click,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    push_payload,
    rejected_pull,
    scores,
)
from tests.support.webhook_helpers import example, webhook_headers


@pytest.fixture
def bot(blocking_bot: Harness) -> Harness:
    return blocking_bot


async def test_button_on_an_outdated_run_changes_nothing(bot: Harness) -> None:
    number, first = await rejected_pull(bot)
    [old_run] = bot.check_runs(sha=first)
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    second = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nstill thin\n"})
    bot.fake.repo(REPO).pulls[number].head_sha = second
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))
    bot.fake.set_permission(REPO, "maintainer", "write")
    await click(bot, old_run.id, first, "override-accept", "maintainer", number)
    [new_run] = bot.check_runs(sha=second)
    assert new_run.conclusion == "failure"
    assert bot.check_runs(sha=first)[0].conclusion == "failure"
    assert any("no longer the head" in c for c in bot.comments(number))


async def test_button_on_a_fork_run_still_knows_the_pull_request_author(bot: Harness) -> None:
    """Runs of fork branches list no pull requests; the author is still refused."""
    number, sha = await rejected_pull(bot, author="alice", committer="bob")
    [run] = bot.check_runs(sha=sha)
    bot.fake.set_permission(REPO, "alice", "write")
    await click(bot, run.id, sha, "override-accept", "alice", None)
    assert bot.check_runs(sha=sha)[0].conclusion == "failure"
    assert any("did not run" in c for c in bot.comments(number))


async def test_last_failed_attempt_completes_the_run(bot: Harness) -> None:
    """A delivery parked as failed never leaves its run in progress."""
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    bot.fake.inject("pulls/list-files", status=422, times=10)
    body = json.dumps(pull_request_payload(bot.fake, "opened", number)).encode()
    delivery_id = str(uuid.uuid4())
    await bot.client.post(
        bot.webhook_path,
        data=body,
        headers=webhook_headers("pull_request", body, delivery_id=delivery_id),
    )
    async with asyncio.timeout(30):
        while True:
            stored = await bot.storage.get_delivery(delivery_id)
            if stored is not None and stored.status is DeliveryStatus.FAILED:
                break
            await asyncio.sleep(0.02)
    [run] = bot.check_runs(sha=sha)
    # Blocking mode: the App's own failure is not a pass (cause gave-up); a maintainer
    # reruns it.
    assert (run.status, run.conclusion) == ("completed", "action_required")
    assert "could not finish" in run.output["title"]
    assert "comment `/judge rerun`" in run.output["summary"]
    bot.fake.errors.clear()  # the injected 422s are not GitHub's documented answers


async def test_retry_after_the_issue_was_opened_does_not_comment(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*IMPROVE), scores(*IMPROVE))
    bot.llm.script(DEEP, scores(*IMPROVE), scores(*IMPROVE))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n"})
    number = open_pull(bot.fake, sha)
    bot.fake.inject("checks/update", status=502, times=5)  # outlasts the client's retries
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [issue] = bot.issues()
    assert bot.comments(issue.number) == []
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "action_required"
    bot.fake.errors.clear()


async def test_retried_override_is_recorded_once(bot: Harness) -> None:
    number, sha = await rejected_pull(bot)
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.fake.inject("issues/create-comment", status=502, times=5)
    await bot.send(
        "issue_comment", comment_payload(REPO, number, "/judge override accept", "maintainer")
    )
    overrides = [
        v for v in await bot.storage.list_verdicts(head_sha=sha) if v.record["human_override"]
    ]
    assert len(overrides) == 1
    bot.fake.errors.clear()


async def test_rerun_and_override_do_not_pile_up_annotations(bot: Harness) -> None:
    bot.llm.script(
        QUICK,
        scores(*IMPROVE, improvements=["docs/notes.md:1: add a source"]),
        scores(*IMPROVE, improvements=["docs/notes.md:1: add a source"]),
    )
    bot.llm.script(DEEP, scores(*ACCEPT), scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n"})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send("issue_comment", comment_payload(REPO, number, "/judge rerun", "maintainer"))
    [run] = bot.check_runs(sha=sha)
    messages = [a["message"] for a in run.output.get("annotations") or []]
    assert len(messages) == len(set(messages))


async def test_skip_label_added_later_bypasses_at_once(bot: Harness) -> None:
    number, sha = await rejected_pull(bot)
    bot.fake.add_label(REPO, "judge-skip")
    bot.fake.repo(REPO).issues[number].labels.append("judge-skip")
    payload = pull_request_payload(bot.fake, "opened", number)
    labeled = json.loads(example("pull_request", "labeled"))
    payload["action"] = "labeled"
    payload["label"] = {**labeled["label"], "name": "judge-skip"}
    payload["sender"]["login"] = "lead"
    # Blocking mode: the label counts because a maintainer, not the author, added it.
    bot.fake.set_permission(REPO, "lead", "maintain")
    await bot.send("pull_request", payload)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "neutral"
    assert "@lead" in run.output["title"]


async def test_new_branch_without_watched_files_gets_no_run(bot: Harness) -> None:
    sha = commit_files(bot.fake, {"src/app.py": "x = 1\n"}, branch="topic")
    payload = push_payload(REPO, before="0" * 40, after=sha, commits=[], ref="refs/heads/topic")
    await bot.send("push", payload)
    assert bot.check_runs(sha=sha) == []
