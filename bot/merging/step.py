"""One step of a queued pull request: fetched facts in, one action out. Pure.

    merged already ──────────────── at the judged sha: MarkMerged (a merge whose worker
                                    died before recording it), else Drop
    closed / draft / base changed / held / merge label gone ──> Drop
    waiting for the judgment of a head the queue moved ───────> Wait (not counted)
    head sha != judged sha ───────────────────────────────────> Drop (judged again)
    mergeable null ─── precheck retries left ──> Wait (precheck delay)
                   └── none left ─────────────> a failed attempt
    dirty (conflicts) ────────────────────────────────────────> Escalate (conflict)
    behind (the branch must be up to date) ───────────────────> UpdateBranch
    blocked (checks pending, reviews missing) ── after a GitHub event: Wait (not counted)
                                              └─ on the timer: a failed attempt
    otherwise ────────────────────────────────────────────────> Merge at the judged sha

    after PUT merge:  200 MarkMerged · 405 a failed attempt · 409 Drop · 422 Escalate
    a failed attempt: Wait (retry delay) until MERGE_QUEUE_MAX_ATTEMPTS, then Escalate

The judged sha must equal the merged sha, always: the merge request carries it, and a
head the queue moved (update-branch) is judged again before any merge.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.merging.eligibility import PullFacts
from bot.storage.base import MergeEntry

CONFLICT_LABEL = "judge:merge-conflict"
FAILED_LABEL = "judge:merge-failed"


@dataclass(frozen=True)
class MergeLimits:
    max_attempts: int
    retry_delay: timedelta
    precheck_retries: int
    precheck_delay: timedelta


@dataclass(frozen=True)
class Drop:
    reason: str


@dataclass(frozen=True)
class MarkMerged:
    reason: str


@dataclass(frozen=True)
class Wait:
    reason: str
    at: datetime
    attempts: int
    prechecks: int


@dataclass(frozen=True)
class UpdateBranch:
    expected_head_sha: str


@dataclass(frozen=True)
class Escalate:
    """Left for a person: a comment that says what failed and why, and `label`."""

    reason: str
    label: str


@dataclass(frozen=True)
class Merge:
    sha: str
    method: str


QueueAction = Drop | MarkMerged | Wait | UpdateBranch | Escalate | Merge


def failed_attempt(
    entry: MergeEntry, why: str, limits: MergeLimits, now: datetime
) -> Wait | Escalate:
    """GitHub would not merge now; try again after the retry delay, or give up to a person
    once MERGE_QUEUE_MAX_ATTEMPTS attempts have failed."""
    attempts = entry.attempts + 1
    if attempts >= limits.max_attempts:
        return Escalate(f"not merged after {attempts} attempts; the last one: {why}", FAILED_LABEL)
    return Wait(
        f"attempt {attempts} of {limits.max_attempts}: {why}",
        now + limits.retry_delay,
        attempts,
        0,
    )


def gone(entry: MergeEntry, pull: PullFacts) -> Drop | MarkMerged | None:
    """The pull request no longer belongs in this queue."""
    if pull.merged:
        if entry.judged_sha is not None and pull.head_sha == entry.judged_sha:
            return MarkMerged(f"merged at the judged commit {entry.judged_sha[:7]}")
        return Drop("merged outside the queue")
    if pull.state != "open":
        return Drop("closed")
    if pull.draft:
        return Drop("converted to draft")
    if pull.base_ref != entry.base_branch:
        return Drop(f"base branch changed to `{pull.base_ref}`")
    hold = entry.options.hold_label
    if hold is not None and pull.has_label(hold):
        return Drop(f"held by the `{hold}` label")
    label = entry.options.label
    if label is not None and not pull.has_label(label):
        return Drop(f"the `{label}` label was removed")
    return None


def decide_step(
    entry: MergeEntry, pull: PullFacts, limits: MergeLimits, now: datetime
) -> QueueAction:
    """What to do with the queue's head now (see the module docstring)."""
    left = gone(entry, pull)
    if left is not None:
        return left
    if entry.judged_sha is None:
        return Wait(
            "waiting for the judgment of the updated branch",
            now + limits.retry_delay,
            entry.attempts,
            0,
        )
    if pull.head_sha != entry.judged_sha:
        return Drop("new commits after the judged one; they are judged again")
    if pull.mergeable is None or pull.mergeable_state == "unknown":
        if entry.prechecks < limits.precheck_retries:
            return Wait(
                "GitHub is still computing whether it can merge",
                now + limits.precheck_delay,
                entry.attempts,
                entry.prechecks + 1,
            )
        return failed_attempt(entry, "GitHub did not say whether it can merge", limits, now)
    if pull.mergeable_state == "dirty":
        return Escalate("the branch conflicts with its base", CONFLICT_LABEL)
    if pull.mergeable_state == "behind":
        return UpdateBranch(pull.head_sha)
    if pull.mergeable_state == "blocked" or not pull.mergeable:
        why = "required checks or reviews are not complete"
        if entry.nudged:
            return Wait(why, now + limits.retry_delay, entry.attempts, 0)
        return failed_attempt(entry, why, limits, now)
    return Merge(entry.judged_sha, entry.method)


def after_merge(
    entry: MergeEntry, status: int, message: str, limits: MergeLimits, now: datetime
) -> MarkMerged | Wait | Drop | Escalate:
    """GitHub's answer to `PUT .../merge` at the judged sha."""
    if status == 200:
        sha = entry.judged_sha or ""
        return MarkMerged(f"merged at the judged commit {sha[:7]}")
    if status == 405:
        return failed_attempt(entry, f"GitHub refused the merge: {message}", limits, now)
    if status == 409:
        return Drop("the head branch moved before the merge; the new head is judged again")
    return Escalate(f"GitHub refused the merge ({status}): {message}", FAILED_LABEL)


def after_update(status: int, message: str) -> Drop | Escalate | None:
    """GitHub's answer to `PUT .../update-branch`; None when it is updating (202)."""
    if status == 202:
        return None
    if status == 422:
        return Drop("the head branch moved before it could be updated; judged again")
    return Escalate(f"GitHub refused to update the branch ({status}): {message}", FAILED_LABEL)
