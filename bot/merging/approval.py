"""Into and out of the queue: the judged outcome of a pull request's head, and the events
that change whether it belongs there.

`on_concluded` is the one entry point for a final outcome at a sha (the judges' verdict or a
human override): judging calls it before it completes the `judge` check run, so the run
can show the queue position, and commands call it after an override. Anything else that
must react to a judged outcome plugs in here: the circuit breakers (`breaker_flow`) and
review mode (`bot.reviews`) do.

    on_concluded: non-accept ──> the pull request's entry for that sha leaves (the App's
                                 queue, or GitHub's: `dequeuePullRequest`)
                  accept ──────> fetch the pull request ─> `eligibility` ─> enter / stay / leave
    admit_pull: the base branch requires GitHub's merge queue ─> `admit_to_github`
                (`enqueuePullRequest` at the judged sha); otherwise `admit`, the App's queue
    admit:     the decision for the pull request as GitHub describes it now
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.intake.dispatch import Context
from bot.judge.records import VerdictRecord
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from bot.merging import breaker_flow, merge_notices, queue_estimate
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
from bot.merging.github_handover import (
    Handover,
    HandoverState,
    groups_holding,
    hand_over,
    handed_over,
    take_out,
    uses_github_queue,
)
from bot.merging.github_queue import QueueOutcome
from bot.merging.group_runs import fail_groups
from bot.reviews.submit import submit_review
from bot.storage.base import MergeStatus, NewMergeEntry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Admission:
    """Where the pull request stands after `admit`: its place in the queue, if any."""

    position: int | None
    base: str
    entered: bool = False
    eta: str = ""
    """`queue_estimate.describe`'s words for the time to merge; "" says nothing."""
    batch: int | None = None
    github: bool = False
    """In GitHub's merge queue rather than the App's."""
    refused: str | None = None
    """GitHub's merge queue would not take it: GitHub's reason."""

    def check_run_line(self) -> str | None:
        if self.refused is not None:
            return merge_notices.github_refused_line(self.base, self.refused)
        if self.github:
            return merge_notices.github_queue_line(self.base, self.position, self.eta)
        if self.position is None:
            return None
        return merge_notices.queue_line(self.base, self.position, self.eta, self.batch)


def queue_key(repository: str) -> str:
    """Queues are kept per repository as GitHub spells it case-insensitively."""
    return repository.lower()


async def on_concluded(
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
    tripped = await breaker_flow.count_outcome(context, target, verdict, content)
    decided_by = None if actor.startswith("judge (") else actor  # logins have no spaces
    await submit_review(context, config, target, verdict, records, decided_by=decided_by)
    storage = context.storage
    repository = queue_key(target.repository)
    if not is_approval(verdict):
        await _leave_github_queue(context, target, verdict)
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
    raw = await calls.pull(target.pull_number)
    admission = await admit_pull(
        context, calls, policy, raw, accepted_sha=target.head_sha, actor=actor
    )
    return admission.check_run_line()


async def _leave_github_queue(context: Context, target: Target, verdict: str) -> None:
    """A verdict other than accept at the head GitHub's queue holds takes it out; one at
    another head does not (that head's push took it out already). Every live merge group
    merging that head fails first: GitHub refuses the take-out while a group being tested
    holds the entry, and would merge the group on its earlier `judge` success."""
    assert target.pull_number is not None
    storage, number, head = context.storage, target.pull_number, target.head_sha
    record = await handed_over(storage, target.repository, number)
    if record is not None and (record.state is not HandoverState.QUEUED or record.sha != head):
        record = None
    groups = await groups_holding(storage, target.repository, number, head)
    if record is None and not groups:
        return
    client = await context.services.github.installation_client(target.installation_id)
    await fail_groups(storage, client, target.repository, groups, number, head, verdict)
    if record is not None:
        reason = f"judged {verdict} at {head[:7]}"
        await take_out(storage, client, record, reason, context.clock())


async def admit_pull(
    context: Context,
    calls: MergeCalls,
    policy: MergePolicy,
    raw: dict[str, Any],
    *,
    accepted_sha: str | None,
    actor: str,
) -> Admission:
    """`admit` into the App's queue, or into GitHub's where the base branch requires it.
    `raw`: GitHub's pull request as REST gives it (its `node_id` names it to GraphQL)."""
    pull = PullFacts.from_json(raw)
    if policy.enabled and await uses_github_queue(
        context.storage, calls, pull.base_ref, context.clock()
    ):
        admission = await admit_to_github(
            context, calls, policy, pull, str(raw.get("node_id") or ""), accepted_sha, actor
        )
        if admission is not None:
            return admission
    return await admit(context, calls, policy, pull, accepted_sha=accepted_sha, actor=actor)


async def admit_to_github(
    context: Context,
    calls: MergeCalls,
    policy: MergePolicy,
    pull: PullFacts,
    node_id: str,
    accepted_sha: str | None,
    actor: str,
) -> Admission | None:
    """The pull request into GitHub's merge queue at the judged sha, kept there, or taken
    out, as `eligibility` decides. None when GitHub says the branch has no queue after all
    (the App's own queue takes over)."""
    storage, now = context.storage, context.clock()
    repository = queue_key(calls.full_name)
    approved = False
    if policy.require_human_approval and accepted_sha == pull.head_sha:
        approved = await has_human_approval(calls, pull)
    decision = eligibility(policy, pull, accepted_sha=accepted_sha, human_approved=approved)
    if await storage.active_merge(repository, pull.number) is not None:
        await storage.leave_merge_queue(
            repository,
            pull.number,
            status=MergeStatus.DROPPED,
            actor=actor,
            reason=f"`{pull.base_ref}` merges through GitHub's merge queue",
            now=now,
        )
    record = await handed_over(storage, repository, pull.number)
    if record is not None and record.state is not HandoverState.QUEUED:
        record = None
    if not isinstance(decision, Eligible) or (record is not None and record.sha != decision.sha):
        reason = decision.reason if isinstance(decision, NotEligible) else "new commits accepted"
        if record is not None:
            await take_out(storage, calls.client, record, reason, now)
        if not isinstance(decision, Eligible):
            return Admission(None, pull.base_ref)
    elif record is not None:
        eta = queue_estimate.describe_seconds(record.eta_seconds)
        return Admission(record.position, pull.base_ref, eta=eta, github=True)
    handover = Handover(repository, pull.number, pull.base_ref, node_id, decision.sha, actor)
    return await _handed(context, calls, policy, handover)


async def _handed(
    context: Context, calls: MergeCalls, policy: MergePolicy, handover: Handover
) -> Admission | None:
    """`enqueuePullRequest`, and what people are told of GitHub's answer."""
    answer = await hand_over(context.storage, calls.client, handover, context.clock())
    base, sha, number = handover.base_branch, handover.sha, handover.pull_number
    if answer.outcome is QueueOutcome.NO_MERGE_QUEUE:
        return None
    if answer.outcome is QueueOutcome.HEAD_CHANGED:
        log.info("%s#%s moved past %s before it was queued", handover.repository, number, sha)
        return Admission(None, base)
    if answer.outcome is not QueueOutcome.QUEUED:
        await calls.comment(number, merge_notices.refused_by_github(base, sha, answer.message))
        return Admission(None, base, refused=answer.message)
    await calls.comment(
        number, merge_notices.entered_github(base, sha, answer.position, policy.hold_label)
    )
    eta = queue_estimate.describe_seconds(answer.eta_seconds)
    return Admission(answer.position, base, entered=True, eta=eta, github=True)


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
        return await _placed(context, repository, pull)
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
    placed = await _placed(context, repository, pull)
    position = placed.position or 1
    entered = move is not QueueMove.RESUME
    if entered:
        await calls.comment(
            pull.number,
            merge_notices.entered(pull.base_ref, position, decision.sha, method, policy.hold_label),
        )
    return replace(placed, entered=entered)


def _installation(context: Context) -> int:
    installation = context.installation_id
    assert installation is not None, "merge handlers run only for installations"
    return installation


async def _placed(context: Context, repository: str, pull: PullFacts) -> Admission:
    """The pull request's place in its queue, the time to merge the queue's own history
    suggests, and the batch it is tested in (when the queue tests it in one)."""
    queue = await context.storage.merge_queue(repository, pull.base_ref)
    numbers = [entry.pull_number for entry in queue]
    position = numbers.index(pull.number) + 1 if pull.number in numbers else len(numbers) + 1
    mine = queue[position - 1] if position <= len(queue) else None
    intervals = queue_estimate.merge_intervals(await context.storage.list_merge_events(repository))
    eta = queue_estimate.describe(queue_estimate.estimate(position, intervals))
    return Admission(position, pull.base_ref, eta=eta, batch=None if mine is None else mine.batch)
