"""What a view has seen (`watermark`), folding new rows into its window (`reading.fold`)
and the memory budget of the windows kept (`live.FactBudget`). Pure."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.dashboard.filters import Filter
from bot.dashboard.live import FactBudget
from bot.dashboard.reading import KeptFacts, ViewWindow, fold, window_of
from bot.dashboard.watermark import (
    HOLE_GRACE_SECONDS,
    LOOKBACK,
    MAX_HOLES,
    Mark,
    advance,
    initial_mark,
    unseen,
)
from bot.judge.records import Tier, Verdict
from bot.storage.base import VerdictFacts
from tests.reports.seeded import NOW, QUICK, judgment, stored_of
from tests.support.fact_builders import facts_of_stored

EVERY = Filter(None, 14)
SINCE = NOW - timedelta(days=14)


def row(seq: int, repository: str = "octo/docs", at: datetime = NOW) -> VerdictFacts:
    record = judgment(repository, seq, Verdict.REJECT, "NO-GO",
                      [(Tier.QUICK, QUICK, Verdict.REJECT)], [], at)  # fmt: skip
    [stored] = stored_of([record])
    return facts_of_stored(stored)._replace(seq=seq)


def kept(*numbers: int) -> KeptFacts:
    return window_of([row(n) for n in numbers], [], before=max(numbers), now=0.0).kept


def seqs(rows: list[VerdictFacts]) -> list[int]:
    return [r.seq for r in rows]


def test_a_read_after_the_last_and_the_gaps_it_leaves() -> None:
    mark = Mark(10)
    assert mark.read_after() == 10
    later = advance(mark, [11, 13], now=5.0)
    assert later == Mark(13, ((12, 5.0),))
    assert later.read_after() == 11
    rows = [row(12), row(13), row(14)]  # 12 committed late; 13 was counted already
    assert seqs(unseen(later, rows)) == [12, 14]
    assert advance(later, seqs(rows), now=6.0) == Mark(14)


def test_a_hole_is_waited_for_then_forgotten() -> None:
    mark = advance(Mark(10), [12], now=0.0)
    assert advance(mark, [], now=HOLE_GRACE_SECONDS - 1).holes == ((11, 0.0),)
    assert advance(mark, [], now=HOLE_GRACE_SECONDS) == Mark(12)


def test_a_long_gap_keeps_only_the_newest_holes() -> None:
    mark = advance(Mark(0), [10_000], now=0.0)
    assert len(mark.holes) == MAX_HOLES
    assert mark.holes[0][0] == 10_000 - MAX_HOLES


def test_a_full_read_looks_back_at_numbers_still_in_flight() -> None:
    """What the read did not return just below the log's last (another repository's
    records, or one still being written) is read once more."""
    mark = initial_mark(100, [98, 101], now=0.0)
    assert mark.last == 101
    holes = [seq for seq, _ in mark.holes]
    assert holes[0] == 100 - LOOKBACK + 1 and holes[-1] == 100
    assert 98 not in holes and 99 in holes
    assert initial_mark(0, [], now=0.0) == Mark(0)


def test_fold_counts_what_is_new_of_the_view_in_the_log_order() -> None:
    window = window_of([row(1), row(3)], ["octo/docs"], before=3, now=0.0)
    assert window.mark == Mark(3, ((2, 0.0),))  # 2: still being written, or not the view's
    read = [row(1), row(2, at=NOW - timedelta(minutes=1)), row(3), row(4, "octo/api")]
    folded = fold(window, read, Filter("octo/docs", 14), SINCE, now=1.0)
    assert folded is not None and folded.counted
    kept = folded.window.kept.facts
    assert kept is not None and [f.seq for f in kept] == [1, 2, 3]
    assert folded.window.names == ("octo/docs", "octo/api")
    assert folded.window.mark == Mark(4)
    again = fold(folded.window, read, Filter("octo/docs", 14), SINCE, now=2.0)
    assert again is not None and not again.counted


def test_fold_lets_the_window_start_move_on() -> None:
    old = row(1, at=SINCE + timedelta(seconds=10))
    window = window_of([old], [], before=1, now=0.0)
    later = SINCE + timedelta(minutes=1)
    folded = fold(window, [row(2)], EVERY, later, now=1.0)
    assert folded is not None
    assert [f.seq for f in folded.window.kept.facts or []] == [2]
    too_old = fold(window, [row(2, at=SINCE - timedelta(days=1))], EVERY, SINCE, now=1.0)
    assert too_old is not None and not too_old.counted


def test_a_window_without_its_facts_asks_to_be_read_again() -> None:
    window = ViewWindow(KeptFacts(None), (), (), Mark(1))
    assert fold(window, [row(2)], EVERY, SINCE, now=0.0) is None
    other = fold(window, [row(2, "octo/api")], Filter("octo/docs", 14), SINCE, now=0.0)
    assert other is not None and not other.counted


def test_unreadable_records_are_counted_and_leave_with_the_window() -> None:
    broken = row(2)._replace(readable=False, created_at=SINCE + timedelta(seconds=5))
    window = window_of([row(1), broken], [], before=2, now=0.0)
    assert len(window.unreadable) == 1
    folded = fold(window, [row(3)], EVERY, SINCE + timedelta(minutes=1), now=1.0)
    assert folded is not None and folded.window.unreadable == ()


def test_the_budget_lets_go_of_the_least_recently_shown() -> None:
    budget = FactBudget(limit=5)
    a, b = kept(1, 2), kept(3, 4)
    budget.use(Filter("a/a", 14), a)
    budget.use(Filter("b/b", 14), b)
    budget.use(Filter("a/a", 14), a)  # shown again: now the most recent
    c = kept(5, 6)
    budget.use(Filter("c/c", 14), c)
    assert b.facts is None and a.facts is not None and c.facts is not None
    assert len(budget) == 4
    huge = kept(*range(1, 7))
    budget.use(EVERY, huge)
    assert huge.facts is None and len(budget) == 0
