"""The queue's own history read for people: time to merge and why pull requests left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.merging.merge_notices import github_queue_line, queue_line
from bot.merging.queue_estimate import (
    Departure,
    departures,
    describe,
    describe_seconds,
    estimate,
    merge_intervals,
)
from bot.storage.base import MergeEvent, MergeStatus

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
P, R, M, D, E = (
    MergeStatus.PENDING,
    MergeStatus.PROCESSING,
    MergeStatus.MERGED,
    MergeStatus.DROPPED,
    MergeStatus.ESCALATED,
)


def event(
    seq: int, entry: int, before: MergeStatus | None, after: MergeStatus, minute: int, why: str = ""
) -> MergeEvent:
    return MergeEvent(
        seq,
        entry,
        "octo/hello",
        entry,
        None,
        before,
        after,
        "judge",
        why,
        T0 + timedelta(minutes=minute),
    )


def test_intervals_count_the_time_as_head_only() -> None:
    events = [
        event(1, 1, None, P, 0),
        event(2, 2, None, P, 1),  # waits behind #1
        event(3, 1, P, R, 2),
        event(4, 1, R, M, 10),  # #1: 10 minutes from entering
        event(5, 2, P, M, 14),  # #2: 4 minutes from #1's merge, not 13 from entering
        event(6, 3, None, P, 30),
        event(7, 3, P, D, 31),  # dropped: no interval
        event(8, 4, P, M, 40),  # its entering is older than the history read: skipped
        event(9, 5, None, P, 50),
        event(10, 5, P, M, 49),  # a clock that went back counts as no time
    ]
    assert merge_intervals(events) == [
        timedelta(minutes=10),
        timedelta(minutes=4),
        timedelta(0),
    ]
    assert merge_intervals(events, recent=1) == [timedelta(0)]


def test_estimate_is_position_times_the_median() -> None:
    intervals = [timedelta(minutes=m) for m in (4, 10, 30)]
    assert estimate(1, intervals) == timedelta(minutes=10)
    assert estimate(3, intervals) == timedelta(minutes=30)
    assert estimate(1, []) is None
    assert estimate(0, intervals) is None


def test_describe() -> None:
    assert describe(None) == ""
    assert describe(timedelta(seconds=5)) == "about 1 minute"
    assert describe(timedelta(minutes=25)) == "about 25 minutes"
    assert describe(timedelta(minutes=89)) == "about 89 minutes"
    assert describe(timedelta(hours=3, minutes=10)) == "about 3 hours"
    assert describe_seconds(None) == ""
    assert describe_seconds(1200) == "about 20 minutes"


def test_departures_newest_first_once_each() -> None:
    events = [
        event(1, 1, None, P, 0),
        event(2, 1, P, D, 1, "new commits pushed"),
        event(3, 2, None, P, 2),
        event(4, 2, P, E, 3, "the branch conflicts with its base"),
        event(5, 1, None, P, 4),
        event(6, 1, P, M, 5, "merged at the judged commit abc1234"),
        event(7, 6, None, P, 6),
    ]
    assert departures(events, 5) == [
        Departure(1, M, "merged at the judged commit abc1234", "judge", T0 + timedelta(minutes=5)),
        Departure(2, E, "the branch conflicts with its base", "judge", T0 + timedelta(minutes=3)),
    ]
    assert len(departures(events, 1)) == 1


def test_the_run_lines() -> None:
    assert queue_line("main", 1).startswith("Merge queue: next for `main`. It is merged")
    line = queue_line("main", 2, "about 20 minutes", 3)
    assert line.startswith(
        "Merge queue: position 2 for `main` (in batch 3; merged in about 20 minutes). "
    )
    assert queue_line("main", 2, "", "<b>7</b>").startswith(
        "Merge queue: position 2 for `main` (in batch &lt;b&gt;7&lt;/b&gt;)."
    )
    assert github_queue_line("main", None).startswith(
        "Merge queue: handed to GitHub's merge queue for `main`, at this commit."
    )
    assert github_queue_line("main", 3, "about 30 minutes").startswith(
        "Merge queue: handed to GitHub's merge queue for `main` (position 3, merged in about "
        "30 minutes), at this commit."
    )
    assert github_queue_line("main", 1).startswith(
        "Merge queue: handed to GitHub's merge queue for `main` (next), at"
    )
