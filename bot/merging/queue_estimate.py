"""A queue people can read: how long a place in the queue takes, and why pull requests
left it. Pure, over the queue's own history (`Storage.list_merge_events`).

    merge_intervals  for each recent merge, the time the merged pull request was the head
                     of its queue: from the later of its entering and the merge before it,
                     to its merge. That interval holds what really costs time (the required
                     CI on the head, an update-branch and its CI again, GitHub computing
                     mergeability), with the time it waited behind others taken out.
    estimate         position x the median interval of the last RECENT merges; None
                     without a merge to learn from
    departures       the pull requests that left, newest first, each with its reason

The App's queue merges one pull request at a time; a batch in flight (several at once)
merges faster than this estimate, never slower, so it stays an upper bound there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

from bot.storage.base import MergeEvent, MergeStatus

RECENT = 10
ENDED = frozenset({MergeStatus.MERGED, MergeStatus.DROPPED, MergeStatus.ESCALATED})


def merge_intervals(events: Sequence[MergeEvent], recent: int = RECENT) -> list[timedelta]:
    """`events`: one repository's transitions, oldest first."""
    entered: dict[int, datetime] = {}
    last_merge: datetime | None = None
    intervals: list[timedelta] = []
    for event in events:
        if event.from_status is None:
            entered[event.entry_id] = event.at
        elif event.to_status is MergeStatus.MERGED and event.entry_id in entered:
            start = entered[event.entry_id]
            if last_merge is not None and last_merge > start:
                start = last_merge
            intervals.append(max(event.at - start, timedelta(0)))
            last_merge = event.at
    return intervals[-recent:]


def estimate(position: int, intervals: Sequence[timedelta]) -> timedelta | None:
    """Time until the pull request at `position` (1: the head) is merged."""
    if not intervals or position < 1:
        return None
    return timedelta(seconds=median(i.total_seconds() for i in intervals)) * position


def describe(duration: timedelta | None) -> str:
    """ "about 25 minutes", "about 3 hours"; "" without an estimate."""
    if duration is None:
        return ""
    minutes = max(1, round(duration.total_seconds() / 60))
    if minutes < 90:
        return f"about {minutes} minute{'s' if minutes != 1 else ''}"
    return f"about {round(minutes / 60)} hours"


def describe_seconds(seconds: int | None) -> str:
    """`describe` for GitHub's `estimatedTimeToMerge` (seconds)."""
    return "" if seconds is None else describe(timedelta(seconds=seconds))


@dataclass(frozen=True)
class Departure:
    pull_number: int
    status: MergeStatus
    reason: str
    actor: str
    at: datetime


def departures(events: Sequence[MergeEvent], limit: int) -> list[Departure]:
    """The last `limit` pull requests that left the queue (merged, dropped, escalated),
    newest first, each once (its latest departure)."""
    seen: set[int] = set()
    found: list[Departure] = []
    for event in reversed(events):
        if event.to_status not in ENDED or event.pull_number in seen:
            continue
        seen.add(event.pull_number)
        found.append(
            Departure(event.pull_number, event.to_status, event.reason, event.actor, event.at)
        )
        if len(found) >= limit:
            break
    return found
