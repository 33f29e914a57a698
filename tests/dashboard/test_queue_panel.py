"""The readable queue: each entry's time to merge, batch and priority; what the App handed
to GitHub's merge queue; and why pull requests left, per repository."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.dashboard.queues import (
    GITHUB_QUEUE,
    DepartedRow,
    departed_panels,
    github_panels,
    queue_panels,
)
from bot.merging.github_handover import HandedOver, HandoverState
from bot.storage.base import MergeEvent, MergePriority, MergeStatus
from tests.dashboard.test_queues import NOW, entry

WEB = "https://github.com"


def move(
    seq: int, number: int, before: MergeStatus | None, after: MergeStatus, minutes_ago: int
) -> MergeEvent:
    return MergeEvent(
        seq,
        number,
        "octo/docs",
        number,
        "a" * 40,
        before,
        after,
        "judge",
        f"reason {seq}",
        NOW - timedelta(minutes=minutes_ago),
    )


# Two merges, 20 and 40 minutes as the head: a median of 30 minutes per place.
HISTORY = {
    "octo/docs": [
        move(1, 1, None, MergeStatus.PENDING, 120),
        move(2, 1, MergeStatus.PENDING, MergeStatus.MERGED, 100),
        move(3, 2, None, MergeStatus.PENDING, 110),
        move(4, 2, MergeStatus.PENDING, MergeStatus.MERGED, 60),
        move(5, 3, None, MergeStatus.PENDING, 50),
        move(6, 3, MergeStatus.PENDING, MergeStatus.DROPPED, 45),
    ]
}


def handed(number: int, **changes: Any) -> HandedOver:
    base = HandedOver("octo/api", number, "main", "b" * 40, f"PR_{number}", "judge", NOW)
    return HandedOver(**{**base.__dict__, **changes})


def test_rows_say_the_time_to_merge_the_batch_and_the_priority() -> None:
    urgent = entry(5, priority=MergePriority.URGENT)
    panels = queue_panels([urgent, entry(6)], WEB, NOW, HISTORY)
    first, second = panels[0].rows
    assert (first.eta, first.priority, first.batch) == ("about 30 minutes", "urgent", "")
    assert (second.eta, second.priority) == ("about 60 minutes", "")
    no_history = queue_panels([entry(5)], WEB, NOW)
    assert no_history[0].rows[0].eta == ""


def test_a_batch_is_shown_when_the_entry_has_one() -> None:
    [panel] = queue_panels([entry(7, batch=3)], WEB, NOW)
    assert panel.rows[0].batch == "3"


def test_githubs_queue_is_listed_per_branch_in_githubs_order() -> None:
    records = [
        handed(9, position=2, eta_seconds=1200),
        handed(8, position=1, jump=True),
        handed(4, base_branch="release", position=None),
        handed(3, state=HandoverState.LEFT, left_reason="closed", left_at=NOW),
    ]
    panels = github_panels(records, WEB)
    assert [(p.base_branch, p.kind, [r.pull_number for r in p.rows]) for p in panels] == [
        ("main", GITHUB_QUEUE, [8, 9]),
        ("release", GITHUB_QUEUE, [4]),
    ]
    head, behind = panels[0].rows
    assert (head.position, head.priority, head.eta) == (1, "urgent", "")
    assert (behind.position, behind.eta, behind.state) == (
        2,
        "about 20 minutes",
        "in GitHub's merge queue",
    )
    assert behind.last_event == f"handed over at {'b' * 7} by judge"
    assert panels[1].rows[0].position == 1
    assert queue_panels([], WEB, NOW, {}, records)[0].kind == GITHUB_QUEUE


def test_departures_per_repository_newest_first() -> None:
    records = [
        handed(3, state=HandoverState.LEFT, left_reason="new commits pushed", left_at=NOW),
        handed(
            2,
            state=HandoverState.MERGED,
            left_reason="merged by GitHub's merge queue",
            left_at=NOW - timedelta(hours=1),
        ),
        handed(1),
        handed(6, state=HandoverState.LEFT, left_reason="odd row without a time"),
    ]
    panels = departed_panels(HISTORY, records, WEB)
    assert [p.repository for p in panels] == ["octo/api", "octo/docs"]
    assert panels[0].rows == [
        DepartedRow(3, f"{WEB}/octo/api/pull/3", "left GitHub's queue", "new commits pushed",
                    "2026-03-01 12:00"),
        DepartedRow(2, f"{WEB}/octo/api/pull/2", "merged", "merged by GitHub's merge queue",
                    "2026-03-01 11:00"),
    ]  # fmt: skip
    assert [(r.pull_number, r.outcome, r.reason) for r in panels[1].rows] == [
        (3, "left", "reason 6"),
        (2, "merged", "reason 4"),
        (1, "merged", "reason 2"),
    ]
    assert len(departed_panels(HISTORY, records, WEB, shown=1)[1].rows) == 1
    escalated = {"octo/x": [move(1, 1, MergeStatus.PROCESSING, MergeStatus.ESCALATED, 1)]}
    assert departed_panels(escalated, [], WEB)[0].rows[0].outcome == "left for a person"
