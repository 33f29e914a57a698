"""The judges' part of a batch: the `judge` run on its queue branch's tip.

Verdicts compose by AND: every member was accepted at its judged head before it joined,
so the tip needs the judges only for what the combination changes beyond each member's
own judged content (`batching.combined_files`, kept as the batch's `review_files`):

    no file to re-read ──> the tip's run completes `accept` at once, no model asked
    files to re-read ────> the judges judge the tip, reading those files only (their
                           diffs from the commit the batch was built on)

The tip's verdict is kept as any judged sha's (`judging.state`), so the base moved to
that commit is not judged again, and the branch protection's required `judge` check is
on the commit the base reaches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from bot.gfm import code, short_sha
from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judging.check_run import CheckRunOutput, finish_output
from bot.judging.flow import judge_target
from bot.judging.run_handle import Abandoned, RunHandle, already_completed, claim
from bot.judging.state import load_state, state_key
from bot.judging.target import Target, task_ref
from bot.merging.queue_branch import QueueBranchCalls, branch_name
from bot.services import ServiceHub
from bot.storage.base import (
    BatchFailure,
    CheckResult,
    Delivery,
    MergeBatch,
    Storage,
)

log = logging.getLogger(__name__)

# The judges' verdicts that let a batch land; "skipped": the files to re-read are none the
# repository watches.
LANDS = frozenset({"accept", "skipped"})


def batch_target(batch: MergeBatch, installation_id: int, default_branch: str) -> Target:
    members = ", ".join(f"#{number}" for number in batch.numbers)
    return Target(
        repository=batch.repository,
        installation_id=installation_id,
        head_sha=batch.tip,
        default_branch=default_branch,
        task=task_ref(batch.repository, sha=batch.tip),
        trigger="merge_queue.batch",
        title=f"judge-bot queue: batch {batch.id} ({members})",
        body=f"{members} merged on {short_sha(batch.built_on)} in "
        f"{code(branch_name(batch.base_branch, batch.id))}",
        compare_base=batch.built_on,
    )


def accepted_output(batch: MergeBatch) -> CheckRunOutput:
    lines = [
        "## Verdict: accept",
        f"Batch {batch.id} of the merge queue for {code(batch.base_branch)}: every pull request "
        "in it was accepted at the head it merges, and no two of them (nor the base since "
        "they left it) change the same file; no model was asked again.",
        "",
        *(f"- #{number}: **accept** at {code(short_sha(sha))}" for number, sha in batch.members),
    ]
    count = len(batch.members)
    title = f"accept · {count} pull request{'s' if count != 1 else ''} accepted"
    return finish_output(
        CheckRunOutput(conclusion="success", title=title, summary="\n".join(lines))
    )


def worker_context(
    storage: Storage,
    hub: ServiceHub,
    clock: Callable[[], datetime],
    batch: MergeBatch,
    installation_id: int,
) -> Context:
    """What judging needs of a delivery, for a judgment the queue's worker asks for."""
    now = clock()
    delivery = Delivery.in_hand(
        f"merge-batch-{batch.id}",
        "merge_queue_batch",
        action=None,
        installation_id=installation_id,
        repository=batch.repository,
        body=b"{}",
        now=now,
    )
    return Context(delivery, storage, hub, clock)


async def review_tip(
    context: Context, calls: QueueBranchCalls, batch: MergeBatch, default_branch: str
) -> None:
    """Start (and, the no-model way, finish) the `judge` run on the batch's tip."""
    installation_id = context.installation_id or 0
    target = batch_target(batch, installation_id, default_branch)
    owner = context.delivery.delivery_id
    if not batch.review_files:
        await complete_without_judges(
            context, calls, target, accepted_output(batch), "accept", "queue batch tip"
        )
        return
    changed, _ = await calls.changed_since_fork(batch.built_on, batch.tip)
    wanted = set(batch.review_files)
    to_read = tuple(change for change in changed if change.path in wanted)
    if to_read:
        # Changed files and commits given: judging reads these files and fetches no others.
        await judge_target(replace(target, changed=to_read, commits=()), context, owner=owner)
        if await load_state(context.storage, state_key(target.repository, target.head_sha)):
            return
    # The shared files came out as content a batch ahead already brought (no change from
    # the commit it is built on), or none the repository watches: nothing to re-read.
    await complete_without_judges(
        context, calls, target, accepted_output(batch), "accept", "queue batch tip"
    )


async def complete_without_judges(
    context: Context,
    gateway: RepoGateway,
    target: Target,
    output: CheckRunOutput,
    verdict: str,
    what: str,
) -> None:
    """The `judge` run on a sha the queue had built (`what`: a merge group, a batch's tip),
    claimed and completed like any judged sha, with no model asked."""
    key = state_key(target.repository, target.head_sha)
    owner = context.delivery.delivery_id
    state = await claim(
        context.storage, key, target, owner=owner, explicit=False, now=context.clock()
    )
    if state is None or already_completed(state, owner):
        return
    app_id = context.services.github.app_id
    run = RunHandle(gateway, context.storage, key, state, owner, app_id=app_id)
    try:
        await run.complete(output, verdict=verdict, target=target)
    except Abandoned:
        log.info("%s %s was taken over", what, target.head_sha, extra=context.log_extra())


async def review_of(storage: Storage, batch: MergeBatch) -> tuple[CheckResult, BatchFailure | None]:
    """The judges' result on the tip so far: pending until its run completed."""
    state = await load_state(storage, state_key(batch.repository, batch.tip))
    if state is None or state.verdict is None:
        return CheckResult.PENDING, None
    verdict = state.verdict if state.override is None else state.override.verdict.value
    if verdict in LANDS:
        return CheckResult.PASSED, None
    where = state.check_run_url or ""
    detail = f"{verdict} {where}".strip()
    return CheckResult.FAILED, BatchFailure("judge", detail, tuple(sorted(batch.review_files)))
