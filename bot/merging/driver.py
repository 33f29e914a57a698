"""Carry out one step of a claimed queue head: fetch, decide (`step`), act, record, tell.

    GET the pull request ─> decide_step ─> Merge: PUT merge at the judged sha ─> after_merge
                                       ├─> UpdateBranch: PUT update-branch ─> after_update
                                       └─> Wait / Drop / Escalate / MarkMerged as decided
    settle the entry (only while this worker still holds it), then tell people:
    merged ─> a comment (and the branch deleted when configured); escalated ─> label + comment

The entry is settled before anyone is told, so a worker that dies in between never
reports twice; one that dies before settling leaves the lease to run out, and the next
worker finds the pull request merged at the judged sha and records it (`MarkMerged`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from bot.merging import merge_notices
from bot.merging.eligibility import PullFacts
from bot.merging.github_calls import MergeCalls
from bot.merging.merge_settings import MergeSettings
from bot.merging.step import (
    Drop,
    Escalate,
    Limits,
    MarkMerged,
    Merge,
    UpdateBranch,
    Wait,
    after_merge,
    after_update,
    decide_step,
)
from bot.merging.transitions import awaiting_judgment, settle_for
from bot.notify.notices import Notice, NoticeKind
from bot.notify.sender import Notifier
from bot.services import Services
from bot.storage.base import MergeEntry, Storage

log = logging.getLogger(__name__)

Outcome = Drop | MarkMerged | Wait | Escalate


def limits_of(settings: MergeSettings) -> Limits:
    return Limits(
        max_attempts=settings.merge_queue_max_attempts,
        retry_delay=settings.retry_delay,
        precheck_retries=settings.pr_mergeable_precheck_retries,
        precheck_delay=settings.precheck_delay,
    )


async def run_step(
    entry: MergeEntry,
    services: Services,
    storage: Storage,
    clock: Callable[[], datetime],
    worker_id: str,
) -> Outcome | None:
    """One step of `entry`, which this worker claimed. Returns the outcome recorded, or
    None when the branch was updated (the entry waits for the new head's judgment) or
    the entry was no longer this worker's to settle."""
    limits = limits_of(services.merge)
    client = await services.github.installation_client(entry.installation_id)
    calls = MergeCalls(client, entry.repository)
    pull = PullFacts.from_json(await calls.pull(entry.pull_number))
    action = decide_step(entry, pull, limits, clock())
    actor = f"merge queue ({worker_id})"
    outcome: Outcome
    if isinstance(action, Merge):
        answer = await calls.merge(entry.pull_number, action.sha, action.method)
        outcome = after_merge(entry, answer.status, answer.message, limits, clock())
    elif isinstance(action, UpdateBranch):
        answer = await calls.update_branch(entry.pull_number, action.expected_head_sha)
        refused = after_update(answer.status, answer.message)
        if refused is None:
            settle = awaiting_judgment(
                action.expected_head_sha, actor, clock() + limits.retry_delay
            )
            await storage.settle_merge(entry.id, worker_id, settle, clock())
            return None
        outcome = refused
    else:
        outcome = action
    if not await storage.settle_merge(entry.id, worker_id, settle_for(outcome, actor), clock()):
        log.info(
            "merge queue entry %s of %s#%s changed while it was worked on; %s not recorded",
            entry.id,
            entry.repository,
            entry.pull_number,
            type(outcome).__name__,
        )
        return None
    await tell(calls, entry, pull, outcome)
    if isinstance(outcome, Escalate):
        notify_escalation(services.notifier, entry, outcome)
    return outcome


async def tell(calls: MergeCalls, entry: MergeEntry, pull: PullFacts, outcome: Outcome) -> None:
    """What people see on the pull request after the step."""
    if isinstance(outcome, MarkMerged):
        deleted = False
        same_repository = (pull.head_repository or "").lower() == entry.repository.lower()
        if entry.options.get("delete_branch") and same_repository and pull.head_ref:
            deleted = await calls.delete_branch(pull.head_ref)
        await calls.comment(
            entry.pull_number,
            merge_notices.merged(
                entry.judged_sha or pull.head_sha, entry.base_branch, entry.method, deleted
            ),
        )
    elif isinstance(outcome, Escalate):
        await calls.add_labels(entry.pull_number, [outcome.label])
        await calls.comment(
            entry.pull_number,
            merge_notices.escalated(outcome.reason, outcome.label, entry.base_branch),
        )


def notify_escalation(notifier: Notifier | None, entry: MergeEntry, outcome: Escalate) -> None:
    """One notice per escalated judgment (a retried step meets the same key)."""
    if notifier is None:
        return
    where = f"{entry.repository}#{entry.pull_number}"
    sha = entry.judged_sha or ""
    notifier.post(
        Notice(
            kind=NoticeKind.MERGE_ESCALATION,
            key=f"merge-escalation:{where}:{sha}",
            summary=f"{where} left the merge queue for {entry.base_branch}: {outcome.reason}",
            repository=entry.repository,
            facts={"pull_request": where, "judged_sha": sha, "label": outcome.label},
        )
    )
