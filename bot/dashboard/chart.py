"""Verdicts per day, stacked by decision, laid out for an inline SVG. Pure.

The template draws what this returns: every rectangle with its place, its kind and a
`<title>` tooltip, so a test can check the geometry without a browser. Each kind has a
colour from a palette readable with colour blindness and a fill pattern of its own, so no
kind is told apart by colour alone; the legend names them and a table repeats the numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from bot.judge.records import Verdict
from bot.reports.facts import RecordFact

WIDTH = 720
HEIGHT = 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 36, 12, 34


@dataclass(frozen=True)
class ChartKind:
    name: str
    colour: str
    pattern: str
    """One of the patterns the template defines: solid, stripes, dots, cross, lines."""


KINDS: tuple[ChartKind, ...] = (
    ChartKind(Verdict.ACCEPT.value, "#009e73", "solid"),
    ChartKind(Verdict.IMPROVE.value, "#e69f00", "stripes"),
    ChartKind(Verdict.REJECT.value, "#d55e00", "cross"),
    ChartKind(Verdict.ESCALATE.value, "#cc79a7", "dots"),
    ChartKind(Verdict.UNDETERMINED.value, "#7a7a7a", "lines"),
)


@dataclass(frozen=True)
class DayCount:
    day: date
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str
    title: str


@dataclass(frozen=True)
class Tick:
    value: int
    y: float


@dataclass(frozen=True)
class DayLabel:
    x: float
    text: str


@dataclass(frozen=True)
class Chart:
    days: list[DayCount]
    bars: list[Bar]
    ticks: list[Tick]
    labels: list[DayLabel]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = _LEFT
    top: int = _TOP
    bottom: int = HEIGHT - _BOTTOM
    right: int = WIDTH - _RIGHT

    @property
    def total(self) -> int:
        return sum(d.total for d in self.days)

    def summary(self) -> str:
        """The chart in one sentence, for screen readers."""
        if not self.days:
            return "No days to show."
        busiest = max(self.days, key=lambda d: d.total)
        return (
            f"{self.total} judgments from {self.days[0].day} to {self.days[-1].day}; "
            f"the busiest day, {busiest.day}, had {busiest.total}."
        )


def per_day(facts: Iterable[RecordFact], since: datetime, until: datetime) -> list[DayCount]:
    """Judgments (not people's overrides) per UTC day, every day of the window listed."""
    counted: dict[date, Counter[str]] = {}
    first, last = since.date(), until.date()
    day = first
    while day <= last:
        counted[day] = Counter()
        day += timedelta(days=1)
    for fact in facts:
        bucket = counted.get(fact.at.date())
        if fact.human is None and bucket is not None and fact.at >= since:
            bucket[fact.decision.value] += 1
    return [DayCount(d, {k.name: c[k.name] for k in KINDS}) for d, c in counted.items()]


def nice_ceiling(value: int) -> int:
    """The smallest 1, 2 or 5 times a power of ten at or above `value` (at least 1)."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if step * scale >= value:
                return step * scale
        scale *= 10


def layout(days: Sequence[DayCount]) -> Chart:
    top_value = nice_ceiling(max((d.total for d in days), default=0))
    plot_height = HEIGHT - _BOTTOM - _TOP
    slot = (WIDTH - _LEFT - _RIGHT) / max(len(days), 1)
    width = max(slot * 0.8, 1.0)
    bars: list[Bar] = []
    for index, day in enumerate(days):
        x = _LEFT + index * slot + (slot - width) / 2
        base = float(HEIGHT - _BOTTOM)
        for kind in KINDS:
            count = day.counts.get(kind.name, 0)
            if not count:
                continue
            height = count / top_value * plot_height
            base -= height
            title = f"{day.day}: {count} {kind.name} of {day.total}"
            bars.append(Bar(round(x, 2), round(base, 2), round(width, 2), round(height, 2),
                            kind.name, title))  # fmt: skip
    values = sorted({0, top_value // 2, top_value})
    ticks = [Tick(v, round(HEIGHT - _BOTTOM - v / top_value * plot_height, 2)) for v in values]
    return Chart(list(days), bars, ticks, _day_labels(days, slot))


def _day_labels(days: Sequence[DayCount], slot: float) -> list[DayLabel]:
    if not days:
        return []
    chosen = sorted({0, len(days) // 2, len(days) - 1})
    return [
        DayLabel(round(_LEFT + i * slot + slot / 2, 2), days[i].day.isoformat()) for i in chosen
    ]
