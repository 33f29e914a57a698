"""GitHub's own merge queue and auto-merge, through GraphQL: one small call each.

    enqueue_pull_request   `enqueuePullRequest` at the judged sha (`expectedHeadOid`), with
                           `jump` for an urgent change
    dequeue_pull_request   `dequeuePullRequest`: the verdict at that head is no accept any more
    enable_auto_merge      `enablePullRequestAutoMerge` at the judged sha
    disable_auto_merge     `disablePullRequestAutoMerge`: GitHub keeps auto-merge on after a
                           push by someone with write access, so a head nobody accepted
                           would merge once its checks pass

GitHub says no to these through GraphQL errors (`type: UNPROCESSABLE`, a sentence starting
"Pull request ..."). They come back as a `QueueAnswer` whose `outcome` the caller decides on
(`answer_of` reads them, pure); a refused request, a rate limit or an outage raises as every
other GitHub call does. Any gidgethub client works: the App's installation client sends the
query to its own GraphQL endpoint (GitHub Enterprise Server too), the Action its workflow's.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gidgethub import QueryError
from gidgethub.abc import GitHubAPI

_MESSAGE_LIMIT = 300

ENQUEUE = """
mutation($pullRequestId: ID!, $expectedHeadOid: GitObjectID!, $jump: Boolean!) {
  enqueuePullRequest(input: {
    pullRequestId: $pullRequestId, expectedHeadOid: $expectedHeadOid, jump: $jump
  }) {
    mergeQueueEntry { position estimatedTimeToMerge state }
  }
}
"""

DEQUEUE = """
mutation($id: ID!) {
  dequeuePullRequest(input: {id: $id}) {
    mergeQueueEntry { position }
  }
}
"""

AUTO_MERGE = """
mutation($pullRequestId: ID!, $expectedHeadOid: GitObjectID!,
         $mergeMethod: PullRequestMergeMethod!) {
  enablePullRequestAutoMerge(input: {
    pullRequestId: $pullRequestId, expectedHeadOid: $expectedHeadOid, mergeMethod: $mergeMethod
  }) {
    pullRequest { number }
  }
}
"""


DISABLE_AUTO_MERGE = """
mutation($pullRequestId: ID!) {
  disablePullRequestAutoMerge(input: {pullRequestId: $pullRequestId}) {
    pullRequest { number }
  }
}
"""


class QueueOutcome(enum.StrEnum):
    QUEUED = "queued"
    DEQUEUED = "dequeued"
    AUTO_MERGE_ENABLED = "auto_merge_enabled"
    AUTO_MERGE_DISABLED = "auto_merge_disabled"
    """Off now, or it was never on."""
    HEAD_CHANGED = "head_changed"
    """The pull request's head is no longer the judged sha: the new head is judged."""
    NOT_QUEUED = "not_queued"
    """Taken out already (or never in): nothing left to do."""
    NO_MERGE_QUEUE = "no_merge_queue"
    """The base branch has no merge queue (enqueue), or auto-merge is off (auto-merge)."""
    NOT_MERGEABLE = "not_mergeable"
    """GitHub will not take it now: conflicts, a draft, closed, reviews or checks missing."""
    REFUSED = "refused"
    """Anything else GitHub said no to: permissions, a pull request it does not know."""


_OK = frozenset(
    {
        QueueOutcome.QUEUED,
        QueueOutcome.DEQUEUED,
        QueueOutcome.AUTO_MERGE_ENABLED,
        QueueOutcome.AUTO_MERGE_DISABLED,
        QueueOutcome.NOT_QUEUED,
    }
)


@dataclass(frozen=True)
class QueueAnswer:
    outcome: QueueOutcome
    message: str = ""
    """GitHub's own sentence (its first error), one line, capped."""
    position: int | None = None
    eta_seconds: int | None = None
    """GitHub's `estimatedTimeToMerge` for the entry, when it gave one."""

    @property
    def ok(self) -> bool:
        return self.outcome in _OK


# Which mutation an error came from decides what "not in the queue" or "disabled" means.
class Mutation(enum.Enum):
    ENQUEUE = "enqueue"
    DEQUEUE = "dequeue"
    AUTO_MERGE = "auto_merge"
    DISABLE_AUTO_MERGE = "disable_auto_merge"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:_MESSAGE_LIMIT]


_ALREADY_QUEUED = ("already queued", "already in the merge queue", "already enqueued")
_AUTO_MERGE_OFF = ("auto merge is not enabled", "auto-merge is not enabled")


def refusal_outcome(mutation: Mutation, kind: str | None, message: str) -> QueueOutcome:
    """What a GraphQL error of `mutation` means, by GitHub's sentence (lower case, key
    phrases). Only a sentence naming the expected head says the head moved (that outcome
    is told to nobody: the new head is judged), and only "already queued/in the queue" is
    an enqueue that happened; an error nothing here recognises is a plain refusal, which
    callers show with GitHub's own sentence."""
    text = message.lower()
    if "expected" in text and "head" in text and ("oid" in text or "sha" in text):
        return QueueOutcome.HEAD_CHANGED
    if mutation is Mutation.DEQUEUE and ("not in the merge queue" in text or "not queued" in text):
        return QueueOutcome.NOT_QUEUED
    if mutation is Mutation.ENQUEUE and any(phrase in text for phrase in _ALREADY_QUEUED):
        return QueueOutcome.QUEUED
    if mutation is Mutation.AUTO_MERGE and "auto merge is not allowed" in text:
        return QueueOutcome.NO_MERGE_QUEUE
    if mutation is Mutation.DISABLE_AUTO_MERGE and any(p in text for p in _AUTO_MERGE_OFF):
        return QueueOutcome.AUTO_MERGE_DISABLED
    if "merge queue" in text and any(
        word in text for word in ("not enabled", "disabled", "does not have", "no merge queue")
    ):
        return QueueOutcome.NO_MERGE_QUEUE
    if kind == "UNPROCESSABLE":
        return QueueOutcome.NOT_MERGEABLE
    return QueueOutcome.REFUSED


def answer_of(mutation: Mutation, errors: Sequence[Any], entry: Any) -> QueueAnswer:
    """A mutation's answer: its first error decides, else what it returned. `entry` is the
    payload's `mergeQueueEntry` (enqueue) or None."""
    if errors:
        first = errors[0] if isinstance(errors[0], Mapping) else {"message": str(errors[0])}
        extensions = first.get("extensions")
        # GitHub puts `type` beside the message; GraphQL servers in general, in extensions.
        kind = first.get("type") or (
            extensions.get("type") if isinstance(extensions, Mapping) else None
        )
        message = _one_line(str(first.get("message") or "no message"))
        outcome = refusal_outcome(mutation, kind if isinstance(kind, str) else None, message)
        return QueueAnswer(outcome, message)
    if mutation is Mutation.DEQUEUE:
        return QueueAnswer(QueueOutcome.DEQUEUED)
    if mutation is Mutation.AUTO_MERGE:
        return QueueAnswer(QueueOutcome.AUTO_MERGE_ENABLED)
    if mutation is Mutation.DISABLE_AUTO_MERGE:
        return QueueAnswer(QueueOutcome.AUTO_MERGE_DISABLED)
    entry = entry if isinstance(entry, Mapping) else {}
    position, eta = entry.get("position"), entry.get("estimatedTimeToMerge")
    return QueueAnswer(
        QueueOutcome.QUEUED,
        position=position if isinstance(position, int) else None,
        eta_seconds=eta if isinstance(eta, int) else None,
    )


async def _mutate(gh: GitHubAPI, query: str, **variables: Any) -> tuple[Any, list[Any]]:
    """The data and the errors of one mutation; GitHub's refusals are answers here."""
    try:
        data = await gh.graphql(query, **variables)
    except QueryError as exc:
        response = exc.response if isinstance(exc.response, Mapping) else {}
        errors = response.get("errors")
        return response.get("data"), list(errors) if isinstance(errors, list) else [str(exc)]
    return data, []


def _field(data: Any, *path: str) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, Mapping) else None
    return data


async def enqueue_pull_request(
    gh: GitHubAPI, pull_node_id: str, expected_head_oid: str, *, jump: bool = False
) -> QueueAnswer:
    """Hand the pull request to its base branch's merge queue, only while its head is
    `expected_head_oid` (the judged sha); `jump` puts it at the front."""
    data, errors = await _mutate(
        gh, ENQUEUE, pullRequestId=pull_node_id, expectedHeadOid=expected_head_oid, jump=jump
    )
    return answer_of(
        Mutation.ENQUEUE, errors, _field(data, "enqueuePullRequest", "mergeQueueEntry")
    )


async def dequeue_pull_request(gh: GitHubAPI, pull_node_id: str) -> QueueAnswer:
    """Take the pull request out of its merge queue; one that is not in it is fine."""
    _, errors = await _mutate(gh, DEQUEUE, id=pull_node_id)
    return answer_of(Mutation.DEQUEUE, errors, None)


async def enable_auto_merge(
    gh: GitHubAPI, pull_node_id: str, expected_head_oid: str, method: str
) -> QueueAnswer:
    """GitHub merges the pull request (or queues it, on a branch with a merge queue) once
    its requirements are met, only while its head is `expected_head_oid`. `method`:
    merge, squash or rebase."""
    _, errors = await _mutate(
        gh,
        AUTO_MERGE,
        pullRequestId=pull_node_id,
        expectedHeadOid=expected_head_oid,
        mergeMethod=method.upper(),
    )
    return answer_of(Mutation.AUTO_MERGE, errors, None)


async def disable_auto_merge(gh: GitHubAPI, pull_node_id: str) -> QueueAnswer:
    """Turn GitHub's auto-merge off for the pull request; one without it is fine."""
    _, errors = await _mutate(gh, DISABLE_AUTO_MERGE, pullRequestId=pull_node_id)
    return answer_of(Mutation.DISABLE_AUTO_MERGE, errors, None)
