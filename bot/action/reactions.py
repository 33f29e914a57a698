"""What reacts to judging in a workflow run (the App's list is `bot/reactions.py`).

    hold       nothing: loop prevention counts the App queue's outcomes, which a workflow
               has none of; each run is started by a push or a person
    judged     as the App: the disagreement issue, then the outage count
    concluded  merge on accept where enabled (`JUDGE_ACTION_MERGE`): GitHub's auto-merge
               or the branch's merge queue at the judged sha, never a merge of our own;
               any other outcome revokes both (`revoke_merge`)

`merge_accepted` is also what an authorised `/judge override accept` sets off, and
`revoke_merge` what an override reject and a new head (the runner, before judging) do:
GitHub keeps auto-merge on after a push by someone with write access, and would merge a
head nobody accepted once its checks pass (a neutral run in advisory mode, an outage that
passes).
"""

from __future__ import annotations

import logging

from bot.action.settings import MergeOnAccept
from bot.gfm import app_line, code, short_sha
from bot.github.client import GitHubClient
from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judge.records import Verdict
from bot.judging.check_run import CheckRunOutput
from bot.judging.reactions import Concluded
from bot.judging.repo_config import MergeMethod
from bot.judging.target import Target
from bot.merging.github_queue import (
    QueueAnswer,
    dequeue_pull_request,
    disable_auto_merge,
    enable_auto_merge,
    enqueue_pull_request,
)
from bot.reactions import FeatureReactions

log = logging.getLogger(__name__)


class ActionReactions(FeatureReactions):
    def __init__(self, merge: MergeOnAccept, method: MergeMethod) -> None:
        self.merge = merge
        self.method = method

    async def hold(
        self, context: Context, target: Target, content: str | None
    ) -> CheckRunOutput | None:
        return None

    async def concluded(self, context: Context, concluded: Concluded) -> str | None:
        if concluded.verdict != Verdict.ACCEPT.value:
            return await revoke_merge(context, concluded.target, self.merge)
        return await merge_accepted(context, concluded.target, self.merge, self.method)


async def merge_accepted(
    context: Context, target: Target, merge: MergeOnAccept, method: MergeMethod
) -> str | None:
    """Hand an accepted pull request's head to GitHub (module docstring); the line the
    check run shows, or None when merging is off or nothing was asked."""
    if merge is MergeOnAccept.OFF or target.pull_number is None:
        return None
    client, node_id = await _pull_node(context, target, target.pull_number)
    if merge is MergeOnAccept.AUTO_MERGE:
        answer = await enable_auto_merge(client, node_id, target.head_sha, method)
    else:
        answer = await enqueue_pull_request(client, node_id, target.head_sha)
    log.info("merge on accept: %s", answer.outcome.value, extra=context.log_extra())
    return merge_line(merge, answer, target.head_sha)


async def _pull_node(
    context: Context, target: Target, pull_number: int
) -> tuple[GitHubClient, str]:
    """The client for the target's repository and its pull request's GraphQL node id, which
    the merge mutations name."""
    client = await context.services.github.installation_client(target.installation_id)
    pull = await RepoGateway(client, target.repository).pull(pull_number)
    return client, str(pull.get("node_id") or "")


def merge_line(merge: MergeOnAccept, answer: QueueAnswer, head_sha: str) -> str:
    """What the check run says of the hand-over: done, at which sha, or GitHub's no."""
    sha = code(short_sha(head_sha))
    if not answer.ok:
        why = app_line(answer.message, 300) or answer.outcome.value
        return f"GitHub did not take the accepted head {sha} ({merge.value}): {why}"
    if merge is MergeOnAccept.AUTO_MERGE:
        return f"Auto-merge is enabled at {sha}: GitHub merges it once its requirements are met."
    where = f" at position {answer.position}" if answer.position is not None else ""
    return f"In the merge queue{where} at {sha}."


async def revoke_merge(context: Context, target: Target, merge: MergeOnAccept) -> str | None:
    """Where merge on accept is enabled, the pull request's auto-merge turned off and its
    merge queue entry taken out: whatever an earlier accept started must not merge this
    head. None when GitHub did both (or there was nothing to undo); else the line the
    check run shows, GitHub's refusal."""
    if merge is MergeOnAccept.OFF or target.pull_number is None:
        return None
    client, node_id = await _pull_node(context, target, target.pull_number)
    answers = (
        await disable_auto_merge(client, node_id),
        await dequeue_pull_request(client, node_id),
    )
    refused = [answer for answer in answers if not answer.ok]
    log.info(
        "merge revoked: %s",
        ", ".join(answer.outcome.value for answer in answers),
        extra=context.log_extra(),
    )
    if not refused:
        return None
    why = app_line(refused[0].message, 300) or refused[0].outcome.value
    return (
        f"GitHub did not turn off auto-merge or take the pull request out of the merge queue "
        f"at {code(short_sha(target.head_sha))}, which is not accepted: {why}"
    )
