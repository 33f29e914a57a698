"""Into and out of the queue: the judged outcome of a pull request's head, and the events
that change whether it belongs there.

`on_judged` is the one entry point for a final outcome at a sha (the judges' verdict or a
human override): judging calls it before it completes the `judge` check run, so the run
can show the queue position, and commands call it after an override. Anything else that
must react to a judged outcome plugs in here: the circuit breakers (`breaker_flow`) and
review mode (`bot.reviews`) do.

    on_judged: non-accept ──> the pull request's entry for that sha leaves
               accept ──────> fetch the pull request ─> `eligibility` ─> enter / stay / leave
    admit:     the decision for the pull request as GitHub describes it now
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot.intake.dispatch import Context
from bot.judge.records import VerdictRecord
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from bot.merging import breaker_flow, merge_notices
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
from bot.merging.github_calls import MergeCalls
from bot.reviews.submit import submit_review
from bot.storage.base import MergeStatus, NewMergeEntry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Admission:
    """Where the pull request stands after `admit`: its place in the queue, if any."""

    position: int | None
    base: str
    entered: bool = False

    def check_run_line(self) -> str | None:
        return None if self.position is None else merge_notices.queue_line(self.base, self.position)


def queue_key(repository: str) -> str:
    """Queues are kept per repository as GitHub spells it case-insensitively."""
    return repository.lower()


async def on_judged(
    context: Context,
    config: RepoConfig | None,
    target: Target,
    verdict: str,
    *,
    actor: str,
    content: str | None = None,
    records: Sequence[VerdictRecord] = (),
) -> str | None:
    """A final outcome at `target.head_sha`; returns the line for the `judge` check run
    when the pull request is (still) queued or the outcome tripped a circuit breaker.
    `content` fingerprints what the judges read (None for a person's decision)."""
    if target.pull_number is None:
        return None
    tripped = await breaker_flow.record(context, target, verdict, content)
    decided_by = None if actor.startswith("judge (") else actor  # logins have no spaces
    await submit_review(context, config, target, verdict, records, decided_by=decided_by)
    storage = context.storage
    repository = queue_key(target.repository)
    if not is_approval(verdict):
        active = await storage.active_merge(repository, target.pull_number)
        queued_sha = None if active is None else active.judged_sha
        if leaves_on_verdict(queued_sha, target.head_sha, queued=active is not None):
            await storage.leave_merge_queue(
                repository,
                target.pull_number,
                status=MergeStatus.DROPPED,
                actor=actor,
                reason=f"judged {verdict} at {target.head_sha[:7]}",
                now=context.clock(),
            )
        return tripped
    services = context.services
    policy = merge_policy(None if config is None else config.merge, services.merge.merge_on_approve)
    if not policy.enabled:
        return None
    client = await services.github.installation_client(target.installation_id)
    calls = MergeCalls(client, target.repository)
    pull = PullFacts.from_json(await calls.pull(target.pull_number))
    admission = await admit(context, calls, policy, pull, accepted_sha=target.head_sha, actor=actor)
    return admission.check_run_line()


async def has_human_approval(calls: MergeCalls, pull: PullFacts) -> bool:
    reviews = [Review.from_json(r) for r in await calls.reviews(pull.number)]
    candidates = approver_candidates(reviews, pull.author, pull.head_sha)
    for login in candidates:
        permission, _ = await calls.permission(login)
        if human_approved([login], {login: permission}):
            return True
    return False


async def admit(
    context: Context,
    calls: MergeCalls,
    policy: MergePolicy,
    pull: PullFacts,
    *,
    accepted_sha: str | None,
    actor: str,
) -> Admission:
    """Put the pull request in its queue, keep it there, or take it out, as `eligibility`
    decides for what GitHub says of it now."""
    storage = context.storage
    repository = queue_key(calls.full_name)
    approved = False
    if policy.require_human_approval and accepted_sha == pull.head_sha:
        approved = await has_human_approval(calls, pull)
    decision = eligibility(policy, pull, accepted_sha=accepted_sha, human_approved=approved)
    active = await storage.active_merge(repository, pull.number)
    move = queue_move(
        decision,
        None if active is None else active.judged_sha,
        None if active is None else active.base_branch,
        pull.base_ref,
    )
    now = context.clock()
    if move in (QueueMove.LEAVE, QueueMove.REENTER):
        reason = (
            decision.reason
            if isinstance(decision, NotEligible)
            else "new commits accepted; queued again at the back"
        )
        await storage.leave_merge_queue(
            repository, pull.number, status=MergeStatus.DROPPED, actor=actor, reason=reason, now=now
        )
    if move is QueueMove.STAY:
        return Admission(await _position(context, repository, pull), pull.base_ref)
    if not isinstance(decision, Eligible):
        return Admission(None, pull.base_ref)
    method = policy.method or await calls.merge_method()
    entry = NewMergeEntry(
        repository=repository,
        base_branch=pull.base_ref,
        pull_number=pull.number,
        installation_id=_installation(context),
        judged_sha=decision.sha,
        method=method,
        options=policy.options(),
    )
    await storage.enqueue_merge(
        entry, actor=actor, reason=f"accepted at {decision.sha[:7]}", now=now
    )
    context.hub.merge_doorbell.ring()
    position = await _position(context, repository, pull)
    entered = move is not QueueMove.RESUME
    if entered:
        await calls.comment(
            pull.number,
            merge_notices.entered(pull.base_ref, position, decision.sha, method, policy.hold_label),
        )
    return Admission(position, pull.base_ref, entered=entered)


def _installation(context: Context) -> int:
    installation = context.installation_id
    assert installation is not None, "merge handlers run only for installations"
    return installation


async def _position(context: Context, repository: str, pull: PullFacts) -> int:
    queue = await context.storage.merge_queue(repository, pull.base_ref)
    numbers = [entry.pull_number for entry in queue]
    return numbers.index(pull.number) + 1 if pull.number in numbers else len(numbers) + 1
