"""Pushes to the merge queue's own branches are not judged as an author's push: the queue
asks the judges itself for what a batch's combination changes (bot/merging/batch_review.py)."""

from __future__ import annotations

import pytest

from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    REPO,
    Harness,
    commit_files,
    push_payload,
    scores,
)


@pytest.mark.parametrize(
    "branch", ["judge-bot/queue/main/1", "judge-bot/queue-build/main/1", "feature"]
)
async def test_only_pushes_outside_the_queue_branches_are_judged(
    advisory_bot: Harness, branch: str
) -> None:
    bot = advisory_bot
    bot.llm.script(QUICK, scores(*ACCEPT))
    before = bot.fake.repo(REPO).branches["main"]
    sha = commit_files(bot.fake, {"research/topic.md": GOOD_DOC}, branch=branch)
    payload = push_payload(
        REPO,
        before=before,
        after=sha,
        ref=f"refs/heads/{branch}",
        commits=[{"id": sha, "added": ["research/topic.md"]}],
    )
    await bot.send("push", payload)
    judged = branch == "feature"
    assert len(bot.check_runs(sha=sha)) == (1 if judged else 0)
    assert bool(bot.llm.requests) is judged
