"""Calibration figures per judge model and per model family (seed 001's model performance
comparison), so a person sees which tier errs. Pure.

Per model (or family), over the rounds it ran in the window's judgments:

* failed: rounds that got no usable answer (the judgment is then undetermined, or
  decided by the other tiers);
* verdicts: what its answered rounds said, read from their scores;
* GO rate: the GO share of the judgments it decided (it ran their deciding round);
* false positives: its not-accepting rounds in changes a person overrode to accept, over
  its not-accepting rounds; false negatives: its accepting rounds in changes a person
  overrode to reject, over its accepting rounds;
* availability, latency (per call, retries included) and cost: from its calls.

A call is matched to its family through the record's round of the same tier.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bot.judge.authorship import family_of_model
from bot.judge.records import Verdict, deciding_round
from bot.reports.facts import RoundFact
from bot.reports.measures import (
    Availability,
    Mistakes,
    Rate,
    Spend,
    median_and_p95,
)
from bot.reports.shapes import Shape, ShapeKey


@dataclass(frozen=True)
class GroupFigures:
    name: str
    rounds: int
    failed: Rate
    verdicts: dict[str, int]
    decided: int
    go: Rate
    false_positives: Rate
    false_negatives: Rate
    availability: Rate
    latency_median_s: float | None
    latency_p95_s: float | None
    tokens: int
    cost: float | None


@dataclass
class _GroupTally:
    name: str
    verdicts: Counter[str] = field(default_factory=Counter)
    rounds: int = 0
    failed: int = 0
    decided: int = 0
    go: int = 0
    mistakes: Mistakes = field(default_factory=Mistakes)
    latencies: list[float] = field(default_factory=list)
    availability: Availability = field(default_factory=Availability)
    spend: Spend = field(default_factory=Spend)

    def add_round(self, verdict: Verdict | None, human: Verdict | None, times: int) -> None:
        self.rounds += times
        if verdict is None:
            self.failed += times
            return
        self.verdicts[verdict.value] += times
        self.mistakes = self.mistakes.plus(verdict, human, times)

    def figures(self) -> GroupFigures:
        median, p95 = median_and_p95(self.latencies)
        return GroupFigures(
            name=self.name,
            rounds=self.rounds,
            failed=Rate(self.failed, self.rounds),
            verdicts={
                v.value: self.verdicts[v.value] for v in Verdict if v.value != "undetermined"
            },
            decided=self.decided,
            go=Rate(self.go, self.decided),
            false_positives=self.mistakes.false_positives,
            false_negatives=self.mistakes.false_negatives,
            availability=self.availability.rate,
            latency_median_s=median,
            latency_p95_s=p95,
            tokens=self.spend.tokens,
            cost=self.spend.money,
        )


def _grouped(
    shapes: Mapping[ShapeKey, Shape],
    prices: Mapping[str, float],
    name_of: Callable[[RoundFact], str],
    call_name: Callable[[str, str, Mapping[str, str]], str],
) -> list[GroupFigures]:
    tallies: dict[str, _GroupTally] = {}

    def tally(name: str) -> _GroupTally:
        found = tallies.get(name)
        if found is None:
            found = tallies[name] = _GroupTally(name)
        return found

    for key, shape in shapes.items():
        for r in key.rounds:
            tally(name_of(r)).add_round(r.verdict, key.decided, shape.count)
        deciding = deciding_round(key.rounds)
        if deciding is not None:
            group = tally(name_of(deciding))
            group.decided += shape.count
            group.go += shape.count if key.label == "GO" else 0
        families = {r.tier: r.family for r in key.rounds}
        for (tier, model), calls in shape.calls.items():
            group = tally(call_name(model, tier, families))
            group.availability.merge(calls.availability)
            group.spend.add(calls.tokens, prices.get(model))
            group.latencies.extend(calls.latencies)
    return [tallies[name].figures() for name in sorted(tallies)]


def per_model(shapes: Mapping[ShapeKey, Shape], prices: Mapping[str, float]) -> list[GroupFigures]:
    return _grouped(shapes, prices, lambda r: r.model, lambda model, _t, _f: model)


def per_family(shapes: Mapping[ShapeKey, Shape], prices: Mapping[str, float]) -> list[GroupFigures]:
    def family_of_call(model: str, tier: str, families: Mapping[str, str]) -> str:
        return families.get(tier) or family_of_model(model)

    return _grouped(shapes, prices, lambda r: r.family, family_of_call)
