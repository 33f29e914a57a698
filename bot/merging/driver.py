"""Carry out one step of a claimed queue head: fetch, decide (`step`), act, record, tell.

    GET the pull request ─> decide_step ─> Merge: PUT merge at the judged sha ─> after_merge
                                             (405 "through the merge queue": handed to
                                              GitHub's queue, `github_handover`)
                                       ├─> UpdateBranch: PUT update-branch ─> after_update
                                       └─> Wait / Drop / Escalate / MarkMerged as decided
    settle the entry (only while this worker still holds it), then tell people:
    merged ─> the branch deleted when configured (`branch_cleanup`), a comment
    escalated ─> label + comment; a conflict's comment names the files both sides changed
                 (`conflicts`), once per head commit

The entry is settled before anyone is told, so a worker that dies in between never
reports twice; one that dies before settling leaves the lease to run out, and the next
worker finds the pull request merged at the judged sha and records it (`MarkMerged`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from aiohttp import ClientError
from gidgethub import GitHubException

from bot.github.client import GitHubClientError
from bot.merging import merge_notices
from bot.merging.branch_cleanup import (
    Deletion,
    DeletionResult,
    branch_to_delete,
    deletion_result,
    deletion_sentence,
)
from bot.merging.conflicts import ChangedSide, conflict_candidates, conflict_files_text
from bot.merging.eligibility import PullFacts
from bot.merging.github_calls import MergeCalls
from bot.merging.github_handover import hand_over_refused_merge
from bot.merging.step import (
    CONFLICT_LABEL,
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
from bot.merging.transitions import awaiting_judgment, settle_for
from bot.notify.notices import Notice, NoticeKind
from bot.notify.sender import Notifier
from bot.services import Services
from bot.settings.merge import MergeSettings
from bot.storage.base import MergeEntry, Storage

log = logging.getLogger(__name__)

StepOutcome = Drop | MarkMerged | Wait | Escalate
CONFLICT_NOTICE_NAMESPACE = "merge-conflict-notice"
# What a call to GitHub may fail with besides an answer (rate limits, outages, the network):
# after the merge is recorded, such a failure must not cost people the comment.
GITHUB_FAILURES = (GitHubException, GitHubClientError, ClientError, TimeoutError)


def limits_of(settings: MergeSettings) -> MergeLimits:
    return MergeLimits(
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
) -> StepOutcome | None:
    """One step of `entry`, which this worker claimed. Returns the outcome recorded, or
    None when the branch was updated (the entry waits for the new head's judgment) or
    the entry was no longer this worker's to settle."""
    limits = limits_of(services.merge)
    client = await services.github.installation_client(entry.installation_id)
    calls = MergeCalls(client, entry.repository)
    pull = PullFacts.from_json(await calls.pull(entry.pull_number))
    action = decide_step(entry, pull, limits, clock())
    actor = f"merge queue ({worker_id})"
    outcome: StepOutcome
    if isinstance(action, Merge):
        answer = await calls.merge(entry.pull_number, action.sha, action.method)
        # A branch that came to require GitHub's merge queue refuses the merge (405): the
        # entry goes there instead of spending attempts.
        handed = await hand_over_refused_merge(calls, storage, entry, answer, clock())
        outcome = handed or after_merge(entry, answer.status, answer.message, limits, clock())
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
    await tell(calls, storage, entry, pull, outcome)
    if isinstance(outcome, Escalate):
        notify_escalation(services.notifier, entry, outcome)
    return outcome


async def tell(
    calls: MergeCalls, storage: Storage, entry: MergeEntry, pull: PullFacts, outcome: StepOutcome
) -> None:
    """What people see on the pull request after the step."""
    if isinstance(outcome, MarkMerged):
        note = await delete_merged_branch(calls, entry, pull)
        sha = entry.judged_sha or pull.head_sha
        await calls.comment(
            entry.pull_number,
            merge_notices.merged(sha, entry.base_branch, entry.method, note),
        )
    elif isinstance(outcome, Escalate):
        files = ""
        if outcome.label == CONFLICT_LABEL:
            if not await _first_conflict_notice(storage, entry, pull):
                return
            files = conflict_files_text(
                await _conflict_files(calls, entry, pull), entry.base_branch
            )
        await calls.add_labels(entry.pull_number, [outcome.label])
        await calls.comment(
            entry.pull_number,
            merge_notices.escalated(outcome.reason, outcome.label, entry.base_branch, files),
        )


async def delete_merged_branch(calls: MergeCalls, entry: MergeEntry, pull: PullFacts) -> str:
    """Delete the merged head branch when configured; the sentence the comment adds."""
    wanted = entry.options.delete_branch
    branch = branch_to_delete(wanted, pull, entry.repository, entry.base_branch)
    if branch is None:
        return ""
    try:
        answer = await calls.delete_branch(branch)
        result = deletion_result(answer.status, answer.message)
    except GITHUB_FAILURES as exc:
        # The merge stands either way; the comment says the branch is still there.
        result = DeletionResult(Deletion.REFUSED, f"GitHub did not answer ({type(exc).__name__})")
    if result.outcome is not Deletion.DELETED:
        log.info(
            "branch %s of %s#%s not deleted after the merge: %s (%s)",
            branch,
            entry.repository,
            entry.pull_number,
            result.outcome.value,
            result.message,
        )
    return deletion_sentence(branch, result)


async def _first_conflict_notice(storage: Storage, entry: MergeEntry, pull: PullFacts) -> bool:
    """One conflict comment per head: a later step or judgment of the same commit (a
    re-run, a retried step) finds it said already."""
    key = f"{entry.repository}#{entry.pull_number}@{entry.judged_sha or pull.head_sha}"
    return await storage.kv_put_if_absent(
        CONFLICT_NOTICE_NAMESPACE, key, {"entry": entry.id, "base": entry.base_branch}
    )


async def _conflict_files(
    calls: MergeCalls, entry: MergeEntry, pull: PullFacts
) -> tuple[str, ...] | None:
    """The files changed both in the pull request and on its base since it left it; None
    when GitHub could not tell."""
    try:
        theirs, fork_point = await calls.changed_since_fork(entry.base_branch, pull.head_sha)
        if not fork_point:
            return None
        base_side, _ = await calls.changed_since_fork(fork_point, entry.base_branch)
    except GITHUB_FAILURES as exc:
        log.info("conflicting files of %s#%s unknown: %s", entry.repository, entry.pull_number, exc)
        return None
    return conflict_candidates(ChangedSide.of(theirs), ChangedSide.of(base_side))


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
