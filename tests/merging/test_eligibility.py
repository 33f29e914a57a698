"""Who may be in a merge queue: approval, entering and leaving, human approval."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.judging.repo_config import MergeConfig
from bot.merging.eligibility import (
    Eligible,
    MergePolicy,
    NotEligible,
    PullFacts,
    QueueMove,
    Review,
    approver_candidates,
    eligibility,
    human_approved,
    is_approval,
    leaves_on_verdict,
    merge_policy,
    queue_move,
)
from bot.storage.base import MergeOptions

SHA = "c" * 40


def pull(**changes: Any) -> PullFacts:
    base = PullFacts.from_json(
        {
            "number": 3,
            "state": "open",
            "head": {"sha": SHA, "ref": "feature", "repo": {"full_name": "octo/hello"}},
            "base": {"ref": "main"},
            "labels": [{"name": "automerge"}],
            "user": {"login": "agent"},
            "mergeable": None,
        }
    )
    return replace(base, **changes)


ON = MergePolicy(enabled=True)


@pytest.mark.parametrize(
    ("policy", "facts", "accepted", "human", "expected"),
    [
        (ON, pull(), SHA, False, Eligible(SHA)),
        (
            MergePolicy(enabled=False),
            pull(),
            SHA,
            False,
            NotEligible("merging is off for this repository"),
        ),
        (ON, pull(merged=True), SHA, False, NotEligible("already merged")),
        (ON, pull(state="closed"), SHA, False, NotEligible("closed")),
        (ON, pull(draft=True), SHA, False, NotEligible("converted to draft")),
        (ON, pull(), None, False, NotEligible("the judge has not accepted the head commit")),
        (ON, pull(), "d" * 40, False, NotEligible("the judge has not accepted the head commit")),
        (
            ON,
            pull(labels=("judge:hold",)),
            SHA,
            False,
            NotEligible("held by the `judge:hold` label"),
        ),
        (
            MergePolicy(enabled=True, label="ship-it"),
            pull(),
            SHA,
            False,
            NotEligible("waiting for the `ship-it` label", waiting=True),
        ),
        (MergePolicy(enabled=True, label="AUTOMERGE"), pull(), SHA, False, Eligible(SHA)),
        (
            MergePolicy(enabled=True, require_human_approval=True),
            pull(),
            SHA,
            False,
            NotEligible("waiting for an approving review", waiting=True),
        ),
        (MergePolicy(enabled=True, require_human_approval=True), pull(), SHA, True, Eligible(SHA)),
    ],
)
def test_eligibility(
    policy: MergePolicy, facts: PullFacts, accepted: str | None, human: bool, expected: object
) -> None:
    assert eligibility(policy, facts, accepted_sha=accepted, human_approved=human) == expected


@pytest.mark.parametrize(
    ("verdict", "override", "approved"),
    [
        ("accept", None, True),
        ("reject", "accept", True),
        ("accept", "reject", False),
        ("skipped", None, False),
        ("undetermined", None, False),
        ("improve", None, False),
        (None, None, False),
    ],
)
def test_only_a_final_accept_approves(
    verdict: str | None, override: str | None, approved: bool
) -> None:
    assert is_approval(verdict, override) is approved


def test_policy_from_config_and_installation_default() -> None:
    assert merge_policy(None, True) == MergePolicy(enabled=False)
    assert merge_policy(MergeConfig(), True).enabled
    assert not merge_policy(MergeConfig(), False).enabled
    assert not merge_policy(MergeConfig(enabled=False), True).enabled
    policy = merge_policy(MergeConfig(enabled=True, method="rebase", label="go"), False)
    assert (policy.enabled, policy.method, policy.label) == (True, "rebase", "go")
    assert policy.options() == MergeOptions(label="go", hold_label="judge:hold")


def test_approvers_are_latest_approvals_at_the_head_by_others() -> None:
    reviews = [
        Review("maintainer", "APPROVED", SHA),
        Review("agent", "APPROVED", SHA),  # the author
        Review("stale", "APPROVED", "e" * 40),  # an older commit
        Review("changed-mind", "APPROVED", SHA),
        Review("changed-mind", "CHANGES_REQUESTED", SHA),
        Review("commenter", "APPROVED", SHA),
        Review("commenter", "COMMENTED", SHA),  # a comment keeps the approval
        Review("helper[bot]", "APPROVED", SHA),
        Review.from_json({"user": {"login": "later"}, "state": "approved", "commit_id": SHA}),
    ]
    assert approver_candidates(reviews, "Agent", SHA) == ["maintainer", "commenter", "later"]


def test_human_approval_needs_write_access() -> None:
    assert human_approved(["a", "b"], {"a": "read", "b": "maintain"})
    assert not human_approved(["a"], {"a": "triage"})
    assert not human_approved([], {})


ELIGIBLE = Eligible("b" * 40)
REFUSED = NotEligible("closed")


@pytest.mark.parametrize(
    ("decision", "queued_sha", "queued_base", "expected"),
    [
        (REFUSED, None, None, QueueMove.NONE),
        (REFUSED, "b" * 40, "main", QueueMove.LEAVE),
        (REFUSED, None, "main", QueueMove.LEAVE),
        (ELIGIBLE, None, None, QueueMove.ENTER),
        (ELIGIBLE, "b" * 40, "main", QueueMove.STAY),
        (ELIGIBLE, "a" * 40, "main", QueueMove.REENTER),
        (ELIGIBLE, "b" * 40, "release", QueueMove.REENTER),
        (ELIGIBLE, None, "release", QueueMove.REENTER),
        (ELIGIBLE, None, "main", QueueMove.RESUME),
    ],
)
def test_queue_move(
    decision: Eligible | NotEligible,
    queued_sha: str | None,
    queued_base: str | None,
    expected: QueueMove,
) -> None:
    assert queue_move(decision, queued_sha, queued_base, "main") is expected


@pytest.mark.parametrize(
    ("queued_sha", "queued", "expected"),
    [
        ("b" * 40, True, True),
        (None, True, True),
        ("a" * 40, True, False),
        (None, False, False),
    ],
)
def test_a_non_accept_takes_out_only_its_own_judgment(
    queued_sha: str | None, queued: bool, expected: bool
) -> None:
    assert leaves_on_verdict(queued_sha, "b" * 40, queued=queued) is expected


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ({}, MergeOptions()),
        (
            {"label": "automerge", "hold_label": "judge:hold", "delete_branch": True},
            MergeOptions("automerge", "judge:hold", True),
        ),
        # rows written by hand or by older versions: a wrong type reads as unset
        ({"label": 7, "hold_label": ["x"], "delete_branch": 0}, MergeOptions()),
        ({"hold_label": "", "delete_branch": "yes"}, MergeOptions(None, "", True)),
        # a key from a newer version is ignored
        ({"label": "go", "merge_train": {"cars": 2}}, MergeOptions("go")),
    ],
)
def test_queued_options_read_back_what_storage_keeps(
    stored: dict[str, Any], expected: MergeOptions
) -> None:
    assert MergeOptions.from_json(stored) == expected
    assert MergeOptions.from_json(expected.as_json()) == expected


def test_pull_outcome_is_the_pull_requests_own() -> None:
    from bot.judge.records import Verdict
    from bot.judging.state import Override, ShaState
    from bot.merging.eligibility import pull_outcome

    judged = ShaState(target={"pull_number": 7}, verdict="accept")
    assert pull_outcome(judged, 7) == "accept"
    assert pull_outcome(judged, 8) is None, "another pull request's verdict"
    assert pull_outcome(ShaState(target={"pull_number": None}, verdict="accept"), 7) is None
    assert pull_outcome(None, 7) is None
    overridden = judged.model_copy(update={"override": Override(verdict=Verdict.REJECT, by="x")})
    assert pull_outcome(overridden, 7) == "reject"


def test_queued_batch_settings_read_back_and_odd_rows_read_as_one() -> None:
    policy = merge_policy(MergeConfig(enabled=True, batch_size=4, parallel_checks=2), False)
    options = MergeOptions.from_json(policy.options().as_json())
    assert (options.batch_size, options.parallel_checks) == (4, 2)
    for odd in (None, True, 0, -3, "4", 2.5):
        stored = MergeOptions.from_json({"batch_size": odd, "parallel_checks": odd})
        assert (stored.batch_size, stored.parallel_checks) == (1, 1)
