"""The merge queues as the dashboard lists them: one table per (repository, base branch),
head first, each entry with its position, pull request, state, attempts and last event.
Pure.

States, as a person reads them (`docs/merge-queue.md` has the lifecycle):

* merging: a worker holds the entry (status processing) and is merging it or checking it;
* waiting for a judgment: the queue updated the branch and the new head is not judged yet;
* waiting until HH:MM: pending, not due before then (a retry, or waiting on GitHub);
* next: the head, due now; a worker takes it on its next pass;
* queued: behind the head.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.reports.triage_view import when
from bot.storage.base import MergeEntry, MergeStatus


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


@dataclass(frozen=True)
class QueuePanel:
    repository: str
    base_branch: str
    rows: list[QueueRow]


def state_of(entry: MergeEntry, position: int, now: datetime) -> str:
    if entry.status is MergeStatus.PROCESSING:
        return "merging"
    if entry.judged_sha is None:
        return "waiting for a judgment"
    if entry.next_attempt_at > now:
        return f"waiting until {when(entry.next_attempt_at)}"
    return "next" if position == 1 else "queued"


def queue_panels(entries: Sequence[MergeEntry], web_url: str, now: datetime) -> list[QueuePanel]:
    """`entries`: the active ones of every queue, by repository, base branch and id (as
    `Storage.list_active_merges` lists them). `web_url`: GitHub's web address."""
    panels: list[QueuePanel] = []
    for entry in entries:
        if not panels or (panels[-1].repository, panels[-1].base_branch) != (
            entry.repository,
            entry.base_branch,
        ):
            panels.append(QueuePanel(entry.repository, entry.base_branch, []))
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
            )
        )
    return panels
