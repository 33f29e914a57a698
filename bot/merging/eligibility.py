"""Who may be in a merge queue: the approval, and the rules to enter and to leave. Pure.

    approved     the judge's final accept at the head sha (judged, or an authorised
                 `/judge override accept`); a skipped, undetermined or "nothing to judge"
                 run approves nothing
    + optional   an APPROVED review at the head sha by someone with write access who is
                 not the author (`merge.require_human_approval`)
    enters       approved, open, not a draft, not held, labelled when a label is required
    leaves       a new push, a non-accept, the hold label, closing, draft, a base change

The handlers fetch the facts (`PullFacts` from GitHub's pull request) and act on the
answers; nothing here performs I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.judging.four_eyes import WRITE_PERMISSIONS
from bot.judging.repo_config import MergeConfig
from bot.judging.state import ShaState
from bot.storage.base import MergeOptions

ACCEPT = "accept"


@dataclass(frozen=True)
class PullFacts:
    """A pull request as GitHub's REST answer (or a webhook payload) describes it."""

    number: int
    state: str
    merged: bool
    draft: bool
    head_sha: str
    head_ref: str
    head_repository: str | None
    base_ref: str
    labels: tuple[str, ...]
    author: str
    mergeable: bool | None
    mergeable_state: str
    default_branch: str = ""
    """The repository's default branch, as the pull request's base repository says."""

    @classmethod
    def from_json(cls, pull: Mapping[str, Any]) -> PullFacts:
        head = pull.get("head") or {}
        head_repo = head.get("repo") or {}
        base = pull.get("base") or {}
        base_repo = base.get("repo") or {}
        mergeable = pull.get("mergeable")
        return cls(
            number=int(pull["number"]),
            state=str(pull.get("state") or "open"),
            merged=bool(pull.get("merged")),
            draft=bool(pull.get("draft")),
            head_sha=str(head.get("sha") or ""),
            head_ref=str(head.get("ref") or ""),
            head_repository=head_repo.get("full_name") if isinstance(head_repo, dict) else None,
            base_ref=str(base.get("ref") or ""),
            labels=tuple(str(label.get("name", "")) for label in pull.get("labels") or ()),
            author=str((pull.get("user") or {}).get("login") or ""),
            mergeable=mergeable if isinstance(mergeable, bool) else None,
            mergeable_state=str(pull.get("mergeable_state") or "unknown"),
            default_branch=str(base_repo.get("default_branch") or "")
            if isinstance(base_repo, dict)
            else "",
        )

    def has_label(self, name: str | None) -> bool:
        return name is not None and any(
            label.casefold() == name.casefold() for label in self.labels
        )


@dataclass(frozen=True)
class MergePolicy:
    """The repository's merge settings with the installation default applied."""

    enabled: bool
    method: str | None = None
    label: str | None = None
    hold_label: str = "judge:hold"
    require_human_approval: bool = False
    delete_branch: bool = False
    batch_size: int = 1
    parallel_checks: int = 1

    def options(self) -> MergeOptions:
        """What a queue entry keeps of the policy (the method is resolved separately)."""
        return MergeOptions(
            self.label, self.hold_label, self.delete_branch, self.batch_size, self.parallel_checks
        )


def merge_policy(config: MergeConfig | None, installation_default: bool) -> MergePolicy:
    """`merge.enabled` wins either way; unset, JUDGE_MERGE_ON_APPROVE decides. Without a
    readable configuration (None), merging stays off: an invalid file approves nothing."""
    if config is None:
        return MergePolicy(enabled=False)
    enabled = config.enabled if config.enabled is not None else installation_default
    return MergePolicy(
        enabled=enabled,
        method=config.method,
        label=config.label,
        hold_label=config.hold_label,
        require_human_approval=config.require_human_approval,
        delete_branch=config.delete_branch,
        batch_size=config.batch_size,
        parallel_checks=config.parallel_checks,
    )


def is_approval(verdict: str | None, override: str | None = None) -> bool:
    """The final outcome at a sha approves it: a human override decides, else the judges.
    Neutral outcomes (skipped, undetermined, nothing judged) are never an approval."""
    final = override if override is not None else verdict
    return final == ACCEPT


def pull_outcome(state: ShaState | None, number: int) -> str | None:
    """The outcome at a head as this pull request's: a verdict on the same sha judged for
    a push (only the pushed commits' files) or for another pull request is not its own."""
    if state is None or (state.target or {}).get("pull_number") != number:
        return None
    return state.verdict if state.override is None else state.override.verdict.value


@dataclass(frozen=True)
class Eligible:
    """The pull request belongs in its base branch's queue, at `sha`."""

    sha: str


@dataclass(frozen=True)
class NotEligible:
    """Not in the queue; `reason` is said to people and recorded when it leaves."""

    reason: str
    waiting: bool = False
    """Approved by the judge but waiting for something people provide (a review, a
    label): not a reason to tell anyone the pull request left."""


def eligibility(
    policy: MergePolicy,
    pull: PullFacts,
    *,
    accepted_sha: str | None,
    human_approved: bool,
) -> Eligible | NotEligible:
    """Whether the pull request belongs in the queue now, and why not."""
    if not policy.enabled:
        return NotEligible("merging is off for this repository")
    if pull.merged:
        return NotEligible("already merged")
    if pull.state != "open":
        return NotEligible("closed")
    if pull.draft:
        return NotEligible("converted to draft")
    if accepted_sha is None or accepted_sha != pull.head_sha:
        return NotEligible("the judge has not accepted the head commit")
    if pull.has_label(policy.hold_label):
        return NotEligible(f"held by the `{policy.hold_label}` label")
    if policy.label is not None and not pull.has_label(policy.label):
        return NotEligible(f"waiting for the `{policy.label}` label", waiting=True)
    if policy.require_human_approval and not human_approved:
        return NotEligible("waiting for an approving review", waiting=True)
    return Eligible(pull.head_sha)


@dataclass(frozen=True)
class Review:
    login: str
    state: str
    commit_id: str

    @classmethod
    def from_json(cls, review: Mapping[str, Any]) -> Review:
        return cls(
            login=str((review.get("user") or {}).get("login") or ""),
            state=str(review.get("state") or "").upper(),
            commit_id=str(review.get("commit_id") or ""),
        )


# A comment does not change where a reviewer stands; these states do.
_DECIDING_STATES = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})


def approver_candidates(reviews: Iterable[Review], author: str, head_sha: str) -> list[str]:
    """Reviewers whose latest deciding review approves the head sha, the author excepted.
    Their access is checked next (`human_approved`)."""
    latest: dict[str, Review] = {}
    for review in reviews:
        if review.login and review.state in _DECIDING_STATES:
            latest[review.login.casefold()] = review
    return [
        review.login
        for review in latest.values()
        if review.state == "APPROVED"
        and review.commit_id == head_sha
        and review.login.casefold() != author.casefold()
        and not review.login.casefold().endswith("[bot]")
    ]


def human_approved(candidates: Sequence[str], permissions: Mapping[str, str]) -> bool:
    """Someone among `candidates` has write, maintain or admin access."""
    return any(permissions.get(login, "none").lower() in WRITE_PERMISSIONS for login in candidates)


class QueueMove(enum.Enum):
    """What becomes of a pull request's place in its queue after a fresh look at it."""

    STAY = "stay"  # queued already, for this very judgment
    ENTER = "enter"  # not queued: join at the back
    REENTER = "reenter"  # queued for an older judgment or another base: leave, join at the back
    RESUME = "resume"  # queued, waiting for the re-judgment the queue's update asked for
    LEAVE = "leave"  # queued, no longer eligible
    NONE = "none"  # not queued, not eligible


def queue_move(
    decision: Eligible | NotEligible,
    queued_sha: str | None,
    queued_base: str | None,
    base_ref: str,
) -> QueueMove:
    """`queued_sha` / `queued_base`: the active entry's judged sha and base branch, both
    None when the pull request is not queued (an entry waiting for its re-judgment after
    the queue updated its branch has no judged sha)."""
    queued = queued_base is not None
    if not isinstance(decision, Eligible):
        return QueueMove.LEAVE if queued else QueueMove.NONE
    if not queued:
        return QueueMove.ENTER
    if queued_base != base_ref:
        return QueueMove.REENTER  # its base changed: the other branch's queue, at the back
    if queued_sha == decision.sha:
        return QueueMove.STAY
    if queued_sha:
        # Accepted again after a push of its own (not the queue's update): the back.
        return QueueMove.REENTER
    return QueueMove.RESUME


def leaves_on_verdict(queued_sha: str | None, judged_sha: str, queued: bool) -> bool:
    """A non-accept at `judged_sha` takes the entry out when it was queued for that sha
    or is waiting for its re-judgment; a late verdict on an older sha does not."""
    return queued and queued_sha in (judged_sha, None)
