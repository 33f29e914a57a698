"""One step of a queued pull request, as a table: facts in, action out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.merging.eligibility import PullFacts
from bot.merging.step import (
    CONFLICT_LABEL,
    FAILED_LABEL,
    Drop,
    Escalate,
    MarkMerged,
    Merge,
    MergeLimits,
    UpdateBranch,
    Wait,
    after_merge,
    after_update,
    decide_step,
)
from bot.storage.base import MergeEntry, MergeOptions, MergeStatus

NOW = datetime(2025, 1, 1, tzinfo=UTC)
LIMITS = MergeLimits(
    max_attempts=3,
    retry_delay=timedelta(seconds=30),
    precheck_retries=2,
    precheck_delay=timedelta(seconds=1),
)
SHA = "a" * 40
OTHER = "b" * 40


def entry(**changes: Any) -> MergeEntry:
    base = MergeEntry(
        id=1,
        repository="octo/hello",
        base_branch="main",
        pull_number=7,
        installation_id=1,
        judged_sha=SHA,
        judgment_version=1,
        status=MergeStatus.PROCESSING,
        method="squash",
        options=MergeOptions(hold_label="judge:hold"),
        attempts=0,
        prechecks=0,
        nudged=False,
        updating_from=None,
        enqueued_at=NOW,
        next_attempt_at=NOW,
        lease_owner="w",
        lease_expires_at=NOW,
        updated_at=NOW,
        reason="claimed",
    )
    return replace(base, **changes)


def pull(**changes: Any) -> PullFacts:
    base = PullFacts(
        number=7,
        state="open",
        merged=False,
        draft=False,
        head_sha=SHA,
        head_ref="feature",
        head_repository="octo/hello",
        base_ref="main",
        labels=(),
        author="agent",
        mergeable=True,
        mergeable_state="clean",
    )
    return replace(base, **changes)


CASES = [
    ("clean merges the judged sha", entry(), pull(), Merge(SHA, "squash")),
    ("unstable still merges", entry(), pull(mergeable_state="unstable"), Merge(SHA, "squash")),
    (
        "merged at the judged sha is recorded",
        entry(),
        pull(merged=True, state="closed"),
        MarkMerged(f"merged at the judged commit {SHA[:7]}"),
    ),
    (
        "merged elsewhere",
        entry(),
        pull(merged=True, head_sha=OTHER),
        Drop("merged outside the queue"),
    ),
    ("closed", entry(), pull(state="closed"), Drop("closed")),
    ("draft", entry(), pull(draft=True), Drop("converted to draft")),
    ("base changed", entry(), pull(base_ref="dev"), Drop("base branch changed to `dev`")),
    ("held", entry(), pull(labels=("JUDGE:HOLD",)), Drop("held by the `judge:hold` label")),
    (
        "merge label removed",
        entry(options=MergeOptions(label="automerge", hold_label="judge:hold")),
        pull(),
        Drop("the `automerge` label was removed"),
    ),
    (
        "merge label present",
        entry(options=MergeOptions(label="automerge", hold_label="judge:hold")),
        pull(labels=("automerge",)),
        Merge(SHA, "squash"),
    ),
    (
        "new head",
        entry(),
        pull(head_sha=OTHER),
        Drop("new commits after the judged one; they are judged again"),
    ),
    (
        "awaiting judgment after update",
        entry(judged_sha=None, updating_from=SHA),
        pull(head_sha=OTHER),
        Wait("waiting for the judgment of the updated branch", NOW + LIMITS.retry_delay, 0, 0),
    ),
    (
        "mergeable unknown, precheck left",
        entry(prechecks=1),
        pull(mergeable=None, mergeable_state="unknown"),
        Wait("GitHub is still computing whether it can merge", NOW + LIMITS.precheck_delay, 0, 2),
    ),
    (
        "mergeable unknown, prechecks used",
        entry(prechecks=2),
        pull(mergeable=None),
        Wait(
            "attempt 1 of 3: GitHub did not say whether it can merge",
            NOW + LIMITS.retry_delay,
            1,
            0,
        ),
    ),
    (
        "dirty",
        entry(),
        pull(mergeable=False, mergeable_state="dirty"),
        Escalate("the branch conflicts with its base", CONFLICT_LABEL),
    ),
    ("behind", entry(), pull(mergeable_state="behind"), UpdateBranch(SHA)),
    (
        "blocked after an event",
        entry(nudged=True, attempts=1),
        pull(mergeable_state="blocked"),
        Wait("required checks or reviews are not complete", NOW + LIMITS.retry_delay, 1, 0),
    ),
    (
        "blocked on the timer",
        entry(),
        pull(mergeable_state="blocked"),
        Wait(
            "attempt 1 of 3: required checks or reviews are not complete",
            NOW + LIMITS.retry_delay,
            1,
            0,
        ),
    ),
    (
        "blocked on the timer, last attempt",
        entry(attempts=2),
        pull(mergeable=False, mergeable_state="blocked"),
        Escalate(
            "not merged after 3 attempts; the last one: required checks or reviews are not "
            "complete",
            FAILED_LABEL,
        ),
    ),
]


@pytest.mark.parametrize(("name", "queued", "facts", "expected"), CASES, ids=[c[0] for c in CASES])
def test_decide_step(name: str, queued: MergeEntry, facts: PullFacts, expected: object) -> None:
    assert decide_step(queued, facts, LIMITS, NOW) == expected


MERGE_ANSWERS = [
    (200, "", entry(), MarkMerged(f"merged at the judged commit {SHA[:7]}")),
    (
        405,
        "Pull Request is not mergeable",
        entry(attempts=1),
        Wait(
            "attempt 2 of 3: GitHub refused the merge: Pull Request is not mergeable",
            NOW + LIMITS.retry_delay,
            2,
            0,
        ),
    ),
    (
        405,
        "no",
        entry(attempts=2),
        Escalate(
            "not merged after 3 attempts; the last one: GitHub refused the merge: no", FAILED_LABEL
        ),
    ),
    (
        409,
        "moved",
        entry(),
        Drop("the head branch moved before the merge; the new head is judged again"),
    ),
    (
        422,
        "Merge commits are not allowed",
        entry(),
        Escalate("GitHub refused the merge (422): Merge commits are not allowed", FAILED_LABEL),
    ),
]


@pytest.mark.parametrize(("status", "message", "queued", "expected"), MERGE_ANSWERS)
def test_after_merge(status: int, message: str, queued: MergeEntry, expected: object) -> None:
    assert after_merge(queued, status, message, LIMITS, NOW) == expected


def test_after_update() -> None:
    assert after_update(202, "Updating") is None
    assert isinstance(after_update(422, "expected head sha didn't match"), Drop)
    assert after_update(403, "forbidden") == Escalate(
        "GitHub refused to update the branch (403): forbidden", FAILED_LABEL
    )
