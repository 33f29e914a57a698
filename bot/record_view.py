"""How a verdict record is shown to people: its rounds, their scores and verdicts.

A record keeps its last round in top-level fields and the earlier ones in
`previous_rounds`; every page, check run and issue that shows the rounds reads them
through `rounds_of`, so none of them has to know that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.gfm import cell
from bot.judge.records import Tier, Verdict, VerdictRecord

_ABBREVIATIONS = {
    "semantic": "S",
    "pragmatic": "P",
    "syntactic": "X",
    "correctness": "C",
    "scope_adherence": "Sc",
    "code_quality": "Q",
    "completeness": "Cm",
}


def abbreviate(dimension: str) -> str:
    return _ABBREVIATIONS.get(dimension, dimension[:2].title())


def format_score(value: float | None) -> str:
    if value is None:
        return "-"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def scores_glance(scores: Mapping[str, float]) -> str:
    """`S4 P4 X5`: the scores in a few characters, for titles."""
    return " ".join(f"{abbreviate(d)}{format_score(v)}" for d, v in scores.items())


@dataclass(frozen=True)
class RoundView:
    """One model round, whether stored in `previous_rounds` or in the record's own
    top-level fields (the last round that ran)."""

    round: int
    tier: Tier
    model: str
    scores: Mapping[str, float]
    average: float | None
    verdict: Verdict | None
    reasoning: str
    improvements: Sequence[str]
    error: str | None = None
    substituted_for: str | None = None


def rounds_of(record: VerdictRecord) -> list[RoundView]:
    """Every round of a record in order. `previous_rounds` holds the earlier rounds and
    the top-level fields the last one; a producer that also lists the last round in
    `previous_rounds` is handled by not adding it twice."""
    views = [
        RoundView(
            round=r.round,
            tier=r.judge_tier,
            model=r.model,
            scores=r.scores,
            average=r.average,
            verdict=r.verdict,
            reasoning=r.reasoning,
            improvements=r.improvements,
            error=r.error,
            substituted_for=r.substituted_for,
        )
        for r in record.previous_rounds
    ]
    listed = {v.round for v in views}
    if record.round >= 1 and record.judge_tier is not None and record.round not in listed:
        views.append(
            RoundView(
                round=record.round,
                tier=record.judge_tier,
                model=record.model,
                scores=record.scores,
                average=record.average,
                verdict=record.verdict,
                reasoning=record.reasoning,
                improvements=record.improvements,
            )
        )
    return sorted(views, key=lambda v: v.round)


def dimensions_of(rounds: Iterable[RoundView]) -> list[str]:
    """Score dimensions in first-seen order."""
    dims: dict[str, None] = {}
    for view in rounds:
        for dim in view.scores:
            dims.setdefault(dim, None)
    return list(dims)


def round_verdict_cell(view: RoundView) -> str:
    if view.verdict is not None:
        return view.verdict.value
    return "failed: " + cell(view.error or "no answer", 60)
