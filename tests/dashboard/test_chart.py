"""Verdicts per day: the buckets and the bars' geometry."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from bot.dashboard.chart import HEIGHT, KINDS, DayCount, layout, nice_ceiling, per_day
from bot.judge.records import Verdict
from bot.reports.facts import HumanFact, RecordFact

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def fact(at: datetime, decision: Verdict, human: HumanFact | None = None) -> RecordFact:
    return RecordFact(
        seq=1, change=("octo/docs", "", "t"), repository="octo/docs", at=at,
        decision=decision, label="GO", rounds=(), calls=(), human=human,
    )  # fmt: skip


def counts(**given: int) -> dict[str, int]:
    return {kind.name: given.get(kind.name, 0) for kind in KINDS}


def test_every_day_of_the_window_is_listed_and_only_judgments_count() -> None:
    since = NOW - timedelta(days=2)
    facts = [
        fact(NOW, Verdict.ACCEPT),
        fact(NOW - timedelta(hours=1), Verdict.REJECT),
        fact(since, Verdict.IMPROVE),
        fact(since - timedelta(seconds=1), Verdict.ACCEPT),  # before the window, same day
        fact(NOW - timedelta(days=5), Verdict.ACCEPT),  # before the window
        fact(NOW, Verdict.ACCEPT, HumanFact(Verdict.ACCEPT, "alice")),  # a person's record
    ]
    days = per_day(facts, since, NOW)
    assert days == [
        DayCount(date(2026, 2, 27), counts(improve=1)),
        DayCount(date(2026, 2, 28), counts()),
        DayCount(date(2026, 3, 1), counts(accept=1, reject=1)),
    ]
    assert [d.total for d in days] == [1, 0, 2]


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0, 1), (1, 1), (2, 2), (3, 5), (5, 5), (6, 10), (11, 20), (21, 50), (51, 100), (999, 1000)],
)
def test_nice_ceiling(value: int, ceiling: int) -> None:
    assert nice_ceiling(value) == ceiling


def test_bars_stack_in_kind_order_and_fill_to_their_share() -> None:
    days = [
        DayCount(date(2026, 2, 28), counts(accept=2, reject=1, undetermined=1)),
        DayCount(date(2026, 3, 1), counts(improve=5)),
    ]
    chart = layout(days)
    assert [bar.kind for bar in chart.bars] == ["accept", "reject", "undetermined", "improve"]
    accept, reject, undetermined, improve = chart.bars
    bottom = chart.bottom
    plot = chart.bottom - chart.top
    assert accept.y + accept.height == pytest.approx(bottom)
    assert reject.y + reject.height == pytest.approx(accept.y)
    assert undetermined.y + undetermined.height == pytest.approx(reject.y)
    assert improve.height == pytest.approx(plot)  # 5 of a scale of 5
    assert accept.height == pytest.approx(plot * 2 / 5)
    assert accept.x < improve.x and accept.width == improve.width
    assert accept.title == "2026-02-28: 2 accept of 4"
    assert [t.value for t in chart.ticks] == [0, 2, 5]
    assert chart.ticks[0].y == bottom and chart.ticks[-1].y == chart.top
    assert [label.text for label in chart.labels] == ["2026-02-28", "2026-03-01"]
    assert chart.total == 9
    assert chart.summary() == (
        "9 judgments from 2026-02-28 to 2026-03-01; the busiest day, 2026-03-01, had 5."
    )
    assert all(0 <= bar.y <= HEIGHT for bar in chart.bars)


def test_an_empty_window_still_has_axes() -> None:
    chart = layout([DayCount(date(2026, 3, 1), counts())])
    assert chart.bars == [] and chart.total == 0
    assert [t.value for t in chart.ticks] == [0, 1]
    assert layout([]).summary() == "No days to show."
    assert layout([]).labels == []


def test_many_days_get_three_labels_and_thin_bars() -> None:
    days = [DayCount(date(2026, 1, 1) + timedelta(days=i), counts(accept=1)) for i in range(91)]
    chart = layout(days)
    assert len(chart.bars) == 91
    assert [label.text for label in chart.labels] == ["2026-01-01", "2026-02-15", "2026-04-01"]
    assert all(bar.width >= 1 for bar in chart.bars)
