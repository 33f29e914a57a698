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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.judge.authorship import family_of_model
from bot.judge.records import Verdict
from bot.reports.facts import ChangeKey, HumanFact, RecordFact, RoundFact
from bot.reports.measures import (
    Availability,
    Rate,
    Spend,
    false_negative,
    false_positive,
    percentile,
)


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
    fp: list[int] = field(default_factory=lambda: [0, 0])
    fn: list[int] = field(default_factory=lambda: [0, 0])
    latencies: list[float] = field(default_factory=list)
    availability: Availability = field(default_factory=Availability)
    spend: Spend = field(default_factory=Spend)

    def add_round(self, verdict: Verdict | None, human: Verdict | None) -> None:
        self.rounds += 1
        if verdict is None:
            self.failed += 1
            return
        self.verdicts[verdict.value] += 1
        for pair, (considered, counted) in (
            (self.fp, false_positive(verdict, human)),
            (self.fn, false_negative(verdict, human)),
        ):
            pair[0] += considered
            pair[1] += counted

    def figures(self) -> GroupFigures:
        return GroupFigures(
            name=self.name,
            rounds=self.rounds,
            failed=Rate(self.failed, self.rounds),
            verdicts={
                v.value: self.verdicts[v.value] for v in Verdict if v.value != "undetermined"
            },
            decided=self.decided,
            go=Rate(self.go, self.decided),
            false_positives=Rate(self.fp[1], self.fp[0]),
            false_negatives=Rate(self.fn[1], self.fn[0]),
            availability=self.availability.rate,
            latency_median_s=percentile(self.latencies, 0.5),
            latency_p95_s=percentile(self.latencies, 0.95),
            tokens=self.spend.tokens,
            cost=self.spend.money,
        )


def _grouped(
    facts: Sequence[RecordFact],
    humans: Mapping[ChangeKey, HumanFact],
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

    for fact in facts:
        if fact.human is not None:
            continue
        human = humans.get(fact.change)
        decided = None if human is None else human.verdict
        for r in fact.rounds:
            tally(name_of(r)).add_round(r.verdict, decided)
        deciding = fact.deciding_round()
        if deciding is not None:
            group = tally(name_of(deciding))
            group.decided += 1
            group.go += fact.label == "GO"
        families = {r.tier: r.family for r in fact.rounds}
        for call in fact.calls:
            group = tally(call_name(call.model, call.tier, families))
            group.availability.add(call)
            group.spend.add(call, prices.get(call.model))
            group.latencies.append(call.latency_ms / 1000)
    return [tallies[name].figures() for name in sorted(tallies)]


def per_model(
    facts: Sequence[RecordFact],
    humans: Mapping[ChangeKey, HumanFact],
    prices: Mapping[str, float],
) -> list[GroupFigures]:
    return _grouped(facts, humans, prices, lambda r: r.model, lambda model, _t, _f: model)


def per_family(
    facts: Sequence[RecordFact],
    humans: Mapping[ChangeKey, HumanFact],
    prices: Mapping[str, float],
) -> list[GroupFigures]:
    def family_of_call(model: str, tier: str, families: Mapping[str, str]) -> str:
        return families.get(tier) or family_of_model(model)

    return _grouped(facts, humans, prices, lambda r: r.family, family_of_call)
