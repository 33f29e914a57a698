"""The states of a queue entry and the moves between them (seed 004). Pure.

```mermaid
stateDiagram-v2
    [*] --> pending: approved (accept at the head sha)
    pending --> processing: a worker claims the queue's head (lease)
    processing --> processing: the lease ran out (a crashed worker); reclaimed
    processing --> pending: wait (mergeable unknown, checks pending, 405, branch updated)
    processing --> merged: merged at the judged sha
    processing --> dropped: new push, closed, draft, base changed, held, 409
    processing --> escalated: conflict, or attempts used up (label + comment)
    pending --> pending: approved again (same place, new judgment)
    pending --> dropped: new push, non-accept, hold label, closed, draft, base changed
    pending --> merged: landed with its batch (batch_driver), or merged seen on GitHub
    pending --> dropped: evicted from a failed batch, a conflict building one
    merged --> [*]
    dropped --> [*]
    escalated --> [*]
```

Every move is recorded by the store with its time, actor and reason
(`Storage.list_merge_events`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from bot.merging.step import Drop, Escalate, MarkMerged, Wait
from bot.storage.base import MergeSettle, MergeStatus

ALLOWED: Mapping[MergeStatus, frozenset[MergeStatus]] = {
    MergeStatus.PENDING: frozenset(
        {MergeStatus.PENDING, MergeStatus.PROCESSING, MergeStatus.DROPPED, MergeStatus.MERGED}
    ),
    MergeStatus.PROCESSING: frozenset(
        {
            MergeStatus.PROCESSING,
            MergeStatus.PENDING,
            MergeStatus.MERGED,
            MergeStatus.DROPPED,
            MergeStatus.ESCALATED,
        }
    ),
    MergeStatus.MERGED: frozenset(),
    MergeStatus.DROPPED: frozenset(),
    MergeStatus.ESCALATED: frozenset(),
}


def allowed(before: MergeStatus | None, after: MergeStatus) -> bool:
    """Whether a recorded move is one the diagram has; None is "not in a queue"."""
    if before is None:
        return after is MergeStatus.PENDING
    return after in ALLOWED[before]


def settle_for(outcome: Drop | MarkMerged | Wait | Escalate, actor: str) -> MergeSettle:
    """How the worker leaves its claimed entry after a step's outcome."""
    if isinstance(outcome, Wait):
        return MergeSettle(
            MergeStatus.PENDING,
            outcome.reason,
            actor,
            next_attempt_at=outcome.at,
            attempts=outcome.attempts,
            prechecks=outcome.prechecks,
        )
    if isinstance(outcome, MarkMerged):
        return MergeSettle(MergeStatus.MERGED, outcome.reason, actor)
    if isinstance(outcome, Escalate):
        return MergeSettle(MergeStatus.ESCALATED, outcome.reason, actor)
    return MergeSettle(MergeStatus.DROPPED, outcome.reason, actor)


def awaiting_judgment(updated_from: str, actor: str, check_at: datetime) -> MergeSettle:
    """The queue moved the head (update-branch): the entry keeps its place and waits for
    the new head's judgment, which approves it again or takes it out."""
    return MergeSettle(
        MergeStatus.PENDING,
        "branch updated with its base; the new head is judged before any merge",
        actor,
        next_attempt_at=check_at,
        updating_from=updated_from,
        clear_judgment=True,
    )
