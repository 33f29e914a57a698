"""The window's judgments in one pass, grouped by shape. Pure.

Judgments alike in scope, decision, label, a person's standing decision and rounds
(which tiers ran, which models, what each said) count alike in every figure but
their calls, their latency and their date. A large window holds a few hundred shapes
for a hundred thousand judgments, so the figures (`kpis`, `model_kpis`) are worked out
per shape, and only the calls are read one by one, here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from bot.judge.records import Verdict
from bot.reports.facts import ChangeKey, HumanFact, RecordFact, RoundFact
from bot.reports.measures import Availability


class ShapeKey(NamedTuple):
    scope: str
    decision: Verdict
    label: str
    decided: Verdict | None
    """What a person decided about the change since (their standing decision)."""
    rounds: tuple[RoundFact, ...]


@dataclass
class CallTally:
    """One model's calls at one tier, in one shape's judgments."""

    availability: Availability = field(default_factory=Availability)
    tokens: int = 0
    latencies: list[float] = field(default_factory=list)
    """Seconds per call, retries included."""


@dataclass
class Shape:
    count: int = 0
    first_at: datetime | None = None
    latencies: list[float] = field(default_factory=list)
    """Seconds per judgment that called a model: its calls' latencies summed."""
    calls: dict[tuple[str, str], CallTally] = field(default_factory=dict)
    """By (tier, model)."""


def shapes_of(
    facts: Sequence[RecordFact], humans: Mapping[ChangeKey, HumanFact]
) -> dict[ShapeKey, Shape]:
    """Every judgment of `facts` (people's records are left out) by its shape."""
    shapes: dict[ShapeKey, Shape] = {}
    for fact in facts:
        if fact.human is not None:
            continue
        human = humans.get(fact.change)
        decided = None if human is None else human.verdict
        key = ShapeKey(fact.scope, fact.decision, fact.label, decided, fact.rounds)
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = Shape()
        shape.count += 1
        if shape.first_at is None or fact.at < shape.first_at:
            shape.first_at = fact.at
        if fact.calls:
            _add_calls(shape, fact)
    return shapes


def _add_calls(shape: Shape, fact: RecordFact) -> None:
    total = 0.0
    for call in fact.calls:
        total += call.latency_ms
        tally = shape.calls.get((call.tier, call.model))
        if tally is None:
            tally = shape.calls[(call.tier, call.model)] = CallTally()
        tally.availability.add(call)
        tally.tokens += call.tokens
        tally.latencies.append(call.latency_ms / 1000)
    shape.latencies.append(total / 1000)
