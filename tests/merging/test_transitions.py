"""The queue's states and the moves the store records."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.merging.step import Drop, Escalate, MarkMerged, Wait
from bot.merging.transitions import ALLOWED, allowed, awaiting_judgment, settle_for
from bot.storage.base import MergeSettle, MergeStatus

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def test_terminal_states_have_no_way_out() -> None:
    for status in (MergeStatus.MERGED, MergeStatus.DROPPED, MergeStatus.ESCALATED):
        assert not ALLOWED[status]
        assert not allowed(status, MergeStatus.PENDING)


def test_entering_is_only_into_pending() -> None:
    assert allowed(None, MergeStatus.PENDING)
    assert not allowed(None, MergeStatus.PROCESSING)
    assert allowed(MergeStatus.PROCESSING, MergeStatus.PROCESSING)  # lease reclaimed
    assert allowed(MergeStatus.PENDING, MergeStatus.DROPPED)
    assert not allowed(MergeStatus.PENDING, MergeStatus.ESCALATED)


def test_settle_for_each_outcome() -> None:
    assert settle_for(Wait("w", NOW, 2, 1), "me") == MergeSettle(
        MergeStatus.PENDING, "w", "me", next_attempt_at=NOW, attempts=2, prechecks=1
    )
    assert settle_for(MarkMerged("m"), "me") == MergeSettle(MergeStatus.MERGED, "m", "me")
    assert settle_for(Escalate("e", "l"), "me") == MergeSettle(MergeStatus.ESCALATED, "e", "me")
    assert settle_for(Drop("d"), "me") == MergeSettle(MergeStatus.DROPPED, "d", "me")
    waiting = awaiting_judgment("f" * 40, "me", NOW)
    assert (waiting.status, waiting.updating_from, waiting.clear_judgment) == (
        MergeStatus.PENDING,
        "f" * 40,
        True,
    )
