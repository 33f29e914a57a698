"""Seed 000's calibration figures, per repository and overall, and whether blocking mode
may be switched on. Pure: stored facts, the standing human decisions, the thresholds and
the window in; a `Calibration` out.

What each figure is read from (the records hold no more than this):

* a judgment is one record the judges (or the checks without a model) wrote; a person's
  override record is not one. A change judged in two rubric groups, or judged again,
  has one judgment per record.
* a person's standing decision about a change (`facts.human_decisions`) applies to
  every judgment of that change. False positives and negatives come from overrides
  only: a revert is not recorded anywhere the bot reads.
* GO and UNDETERMINED rates: each judgment's own `go_no_go` over all judgments.
* availability: `measures.Availability` over the judgments' model calls.
* latency: per judgment that called a model, the sum of its calls' latencies (the tiers
  run one after the other; retries included); a verdict-cache hit calls none.
* agreement: judgments where two or more tiers answered, and all said the same.
* cost: the calls' prompt and completion tokens, priced per model when configured.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.judge.records import Verdict
from bot.reports.facts import LABELS, RecordFact, ReportWindow, human_decisions
from bot.reports.measures import (
    Availability,
    Mistakes,
    Rate,
    Spend,
    median_and_p95,
)
from bot.reports.model_kpis import GroupFigures, per_family, per_model
from bot.reports.readiness import Readiness, readiness
from bot.reports.shapes import Shape, ShapeKey, shapes_of
from bot.reports.thresholds import CalibrationThresholds

OVERALL = "overall"


@dataclass(frozen=True)
class Figures:
    scope: str
    judgments: int
    decisions: dict[str, int]
    labels: dict[str, int]
    overridden: int
    false_positives: Rate
    false_negatives: Rate
    go: Rate
    undetermined: Rate
    availability: Rate
    latency_median_s: float | None
    latency_p95_s: float | None
    agreement: Rate
    tokens: int
    unpriced_tokens: int
    cost: float | None
    first_at: datetime | None


@dataclass(frozen=True)
class ScopeReport:
    figures: Figures
    readiness: Readiness


@dataclass(frozen=True)
class Calibration:
    window: ReportWindow
    repository: str | None
    overall: ScopeReport
    repositories: list[ScopeReport]
    models: list[GroupFigures]
    families: list[GroupFigures]
    human_decisions: int
    unreadable: int


@dataclass
class _Tally:
    scope: str
    decisions: Counter[Verdict] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    overridden: int = 0
    mistakes: Mistakes = field(default_factory=Mistakes)
    agreement: Rate = field(default_factory=Rate)
    latencies: list[float] = field(default_factory=list)
    availability: Availability = field(default_factory=Availability)
    spend: Spend = field(default_factory=Spend)
    first_at: datetime | None = None

    def add(self, key: ShapeKey, shape: Shape, prices: Mapping[str, float]) -> None:
        """`shape.count` judgments of one shape."""
        count = shape.count
        self.decisions[key.decision] += count
        self.labels[key.label] += count
        self._earliest(shape.first_at)
        self.overridden += count if key.decided is not None else 0
        self.mistakes = self.mistakes.plus(key.decision, key.decided, count)
        answered = {r.verdict for r in key.rounds if r.verdict is not None}
        answers = sum(r.verdict is not None for r in key.rounds)
        self.agreement = self.agreement.plus(len(answered) == 1, answers >= 2, count)
        for (_tier, model), calls in shape.calls.items():
            self.availability.merge(calls.availability)
            self.spend.add(calls.tokens, prices.get(model))
        self.latencies.extend(shape.latencies)

    def _earliest(self, at: datetime | None) -> None:
        if at is not None and (self.first_at is None or at < self.first_at):
            self.first_at = at

    def merge(self, other: _Tally) -> None:
        self.decisions.update(other.decisions)
        self.labels.update(other.labels)
        self.overridden += other.overridden
        self.mistakes += other.mistakes
        self.agreement += other.agreement
        self.latencies.extend(other.latencies)
        self.availability.merge(other.availability)
        self.spend.merge(other.spend)
        self._earliest(other.first_at)

    def figures(self) -> Figures:
        judgments = sum(self.decisions.values())
        median, p95 = median_and_p95(self.latencies)
        return Figures(
            scope=self.scope,
            judgments=judgments,
            decisions={v.value: self.decisions[v] for v in Verdict},
            labels={label: self.labels[label] for label in LABELS},
            overridden=self.overridden,
            false_positives=self.mistakes.false_positives,
            false_negatives=self.mistakes.false_negatives,
            go=Rate(self.labels["GO"], judgments),
            undetermined=Rate(self.labels["UNDETERMINED"], judgments),
            availability=self.availability.rate,
            latency_median_s=median,
            latency_p95_s=p95,
            agreement=self.agreement,
            tokens=self.spend.tokens,
            unpriced_tokens=self.spend.unpriced_tokens,
            cost=self.spend.money,
            first_at=self.first_at,
        )


def scope_figures(
    shapes: Mapping[ShapeKey, Shape], prices: Mapping[str, float]
) -> tuple[Figures, list[Figures]]:
    """Figures over every judgment, and per repository (sorted by name)."""
    scopes: dict[str, _Tally] = {}
    for key, shape in shapes.items():
        tally = scopes.get(key.scope)
        if tally is None:
            tally = scopes[key.scope] = _Tally(key.scope)
        tally.add(key, shape, prices)
    overall = _Tally(OVERALL)
    for tally in scopes.values():
        overall.merge(tally)
    return overall.figures(), [scopes[name].figures() for name in sorted(scopes)]


def calibrate(
    facts: Sequence[RecordFact],
    thresholds: CalibrationThresholds,
    *,
    now: datetime,
    days: int,
    repository: str | None = None,
    unreadable: int = 0,
) -> Calibration:
    """The whole report over `facts` (the window's records, oldest first, already limited
    to `repository` when one was asked for)."""
    window = ReportWindow(since=now - timedelta(days=days), until=now, days=days)
    prices = thresholds.calibration_price_per_1k_tokens
    shapes = shapes_of(facts, human_decisions(facts))
    overall, scopes = scope_figures(shapes, prices)

    def report(figures: Figures) -> ScopeReport:
        return ScopeReport(figures, readiness(figures, thresholds, window))

    return Calibration(
        window=window,
        repository=repository,
        overall=report(overall),
        repositories=[report(f) for f in scopes],
        models=per_model(shapes, prices),
        families=per_family(shapes, prices),
        human_decisions=sum(f.human is not None for f in facts),
        unreadable=unreadable,
    )
