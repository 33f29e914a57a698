"""The merge queues as the dashboard lists them: one table per (repository, base branch),
head first, each entry with its position, pull request, state, batch, priority, attempts,
estimated time to merge and last event; the pull requests the App handed to GitHub's own
merge queue, one table per branch; and, per repository, the pull requests that left a
queue lately and why. Pure.

States, as a person reads them (`docs/merge-queue.md` has the lifecycle):

* merging: a worker holds the entry (status processing) and is merging it or checking it;
* waiting for a judgment: the queue updated the branch and the new head is not judged yet;
* waiting until HH:MM: pending, not due before then (a retry, or waiting on GitHub);
* next: the head, due now; a worker takes it on its next pass;
* queued: behind the head;
* in GitHub's merge queue: handed over; GitHub's queue builds and merges the groups.

The time to merge comes from the queue's own history (`merging.queue_estimate`: the median
time the last merged pull requests of the repository spent as the head, times the
position); in GitHub's queue it is GitHub's own estimate when the App handed it over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.merging.github_handover import HandedOver, HandoverState
from bot.merging.queue_estimate import (
    departures,
    describe,
    describe_seconds,
    estimate,
    merge_intervals,
)
from bot.reports.triage_view import when
from bot.storage.base import MergeEntry, MergeEvent, MergePriority, MergeStatus

APP_QUEUE = "the App's queue"
GITHUB_QUEUE = "GitHub's merge queue"
DEPARTED_SHOWN = 10
"""Per repository: the pull requests that left its queues lately."""


@dataclass(frozen=True)
class QueueRow:
    position: int
    pull_number: int
    link: str
    state: str
    attempts: int
    last_event: str
    """The reason of the entry's last transition, and when (UTC)."""
    since: str
    """When it entered the queue (UTC)."""
    eta: str = ""
    """The estimated time to merge; "" while the queue has no merge to learn from."""
    batch: str = ""
    """The batch it is tested in, when it is in one."""
    priority: str = ""
    """high or urgent, when someone entitled to set it did; "" for normal."""


@dataclass(frozen=True)
class QueuePanel:
    repository: str
    base_branch: str
    rows: list[QueueRow]
    kind: str = APP_QUEUE


@dataclass(frozen=True)
class DepartedRow:
    pull_number: int
    link: str
    outcome: str
    """merged, dropped, escalated (left for a person), or left GitHub's merge queue."""
    reason: str
    at: str


@dataclass(frozen=True)
class DepartedPanel:
    repository: str
    rows: list[DepartedRow] = field(default_factory=list)


def state_of(entry: MergeEntry, position: int, now: datetime) -> str:
    if entry.status is MergeStatus.PROCESSING:
        return "merging"
    if entry.judged_sha is None:
        return "waiting for a judgment"
    if entry.next_attempt_at > now:
        return f"waiting until {when(entry.next_attempt_at)}"
    return "next" if position == 1 else "queued"


def queue_panels(
    entries: Sequence[MergeEntry],
    web_url: str,
    now: datetime,
    history: Mapping[str, Sequence[MergeEvent]] | None = None,
    handed: Sequence[HandedOver] = (),
) -> list[QueuePanel]:
    """`entries`: the active ones of every queue, by repository, base branch and id (as
    `Storage.list_active_merges` lists them). `web_url`: GitHub's web address. `history`:
    each repository's transitions (lower-cased name), for the time to merge. `handed`:
    what the App handed to GitHub's merge queue (those still there are listed)."""
    history = history or {}
    panels: list[QueuePanel] = []
    intervals: list[timedelta] = []
    for entry in entries:
        if not panels or (panels[-1].repository, panels[-1].base_branch) != (
            entry.repository,
            entry.base_branch,
        ):
            panels.append(QueuePanel(entry.repository, entry.base_branch, []))
            intervals = merge_intervals(history.get(entry.repository.lower(), ()))
        rows = panels[-1].rows
        position = len(rows) + 1
        rows.append(
            QueueRow(
                position=position,
                pull_number=entry.pull_number,
                link=f"{web_url}/{entry.repository}/pull/{entry.pull_number}",
                state=state_of(entry, position, now),
                attempts=entry.attempts,
                last_event=f"{entry.reason} ({when(entry.updated_at)})",
                since=when(entry.enqueued_at),
                eta=describe(estimate(position, intervals)),
                batch="" if entry.batch is None else str(entry.batch),
                priority="" if entry.priority is MergePriority.NORMAL else entry.priority.value,
            )
        )
    return panels + github_panels(handed, web_url)


def github_panels(handed: Sequence[HandedOver], web_url: str) -> list[QueuePanel]:
    """The pull requests still in GitHub's merge queue, per branch, in the order GitHub
    gave when it took each (its positions move as the queue merges; GitHub's page has
    the live order)."""
    queued = sorted(
        (h for h in handed if h.state is HandoverState.QUEUED),
        key=lambda h: (h.repository, h.base_branch, h.position or 0, h.enqueued_at),
    )
    panels: list[QueuePanel] = []
    for record in queued:
        if not panels or (panels[-1].repository, panels[-1].base_branch) != (
            record.repository,
            record.base_branch,
        ):
            panels.append(QueuePanel(record.repository, record.base_branch, [], GITHUB_QUEUE))
        panels[-1].rows.append(
            QueueRow(
                position=record.position or len(panels[-1].rows) + 1,
                pull_number=record.pull_number,
                link=f"{web_url}/{record.repository}/pull/{record.pull_number}",
                state="in GitHub's merge queue",
                attempts=0,
                last_event=f"handed over at {record.sha[:7]} by {record.actor}",
                since=when(record.enqueued_at),
                eta=describe_seconds(record.eta_seconds),
                priority="urgent" if record.jump else "",
            )
        )
    return panels


_OUTCOMES = {
    MergeStatus.MERGED: "merged",
    MergeStatus.DROPPED: "left",
    MergeStatus.ESCALATED: "left for a person",
}


def departed_panels(
    history: Mapping[str, Sequence[MergeEvent]],
    handed: Sequence[HandedOver],
    web_url: str,
    shown: int = DEPARTED_SHOWN,
) -> list[DepartedPanel]:
    """Per repository (by name), the pull requests that left a queue lately, newest first:
    the App's queue (its recorded moves) and GitHub's (what the App handed it)."""
    found: dict[str, list[tuple[datetime, DepartedRow]]] = {}
    for repository, events in history.items():
        for left in departures(events, shown):
            row = DepartedRow(
                left.pull_number,
                f"{web_url}/{repository}/pull/{left.pull_number}",
                _OUTCOMES[left.status],
                left.reason,
                when(left.at),
            )
            found.setdefault(repository, []).append((left.at, row))
    for record in handed:
        if record.state is HandoverState.QUEUED or record.left_at is None:
            continue
        outcome = "merged" if record.state is HandoverState.MERGED else "left GitHub's queue"
        row = DepartedRow(
            record.pull_number,
            f"{web_url}/{record.repository}/pull/{record.pull_number}",
            outcome,
            record.left_reason,
            when(record.left_at),
        )
        found.setdefault(record.repository, []).append((record.left_at, row))
    return [
        DepartedPanel(
            name, [row for _, row in sorted(rows, key=lambda r: r[0], reverse=True)][:shown]
        )
        for name, rows in sorted(found.items())
    ]
