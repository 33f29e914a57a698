"""The figures of an evaluation, from what the panel said about each labelled change.
Pure: `JudgedExample` outcomes and model prices in, an `Evaluation` out.

The counting is calibration's (`bot.reports.measures`), with the dataset's label in place
of a person's override, so the two commands' figures read alike:

* false positive: the panel did not accept (improve, reject, escalate: each holds a
  blocking check back) a change labelled accept; the rate is over the changes it did
  not accept. False negative: it accepted a change labelled reject; over the changes
  it accepted. Undetermined is neither, and is counted on its own.
* accuracy: decisions that match the label (accept for accept; improve, reject or
  escalate for reject) over the changes that got a decision (not undetermined).
* GO rate: the GO/NO-GO labels of the records over all changes.
* Cohen's kappa between two tiers: over the changes both answered, their verdicts as
  categories; None when there is nothing to measure (no change, or both always said the
  same one thing, where chance agreement is certain).
* swap consistency: the changes judged again with their files in another order whose
  decision stayed the same, over those judged again with a decision in both orders (a
  change of one file has no other order). A pair undetermined in either order says
  nothing about position bias (an outage, a timeout): left out, and counted apart.
* failed: a change whose judgment raised an unexpected error (`Failed`) is left out of
  every figure and listed apart: it is neither the judges' answer nor an outage.
* per change: latency is the sum of its calls' latencies (tiers run in turn, retries
  included), as calibration counts it; tokens and cost are its calls'.
* per tier and model: its rounds, how many failed, its answered rounds against the
  labels (accuracy, FP, FN as above, round by round), and its calls' availability,
  latency (per call), tokens and cost.
* scores: per rubric dimension, over changes labelled with that dimension's score and
  whose deciding round (the last that answered) scored it, the mean absolute error and
  the mean signed difference (judge minus label).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from bot.judge.records import GoNoGo, Verdict, deciding_round
from bot.judge.settings import TIER_ORDER
from bot.reports.facts import CallFact
from bot.reports.measures import (
    NOT_ACCEPTED,
    Availability,
    Mistakes,
    Rate,
    Spend,
    median_and_p95,
)

# A tier's place in the panel's order, by the name records keep; an unknown name sorts last.
TIER_RANK = {tier.value: rank for rank, tier in enumerate(TIER_ORDER)}


@dataclass(frozen=True, slots=True)
class RoundOutcome:
    tier: str
    model: str
    verdict: Verdict | None
    """None when the round's call or parse failed."""
    scores: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgedExample:
    """What the panel made of one labelled change."""

    name: str
    expected: Verdict
    """ACCEPT or REJECT."""
    decision: Verdict
    label: GoNoGo
    rounds: tuple[RoundOutcome, ...] = ()
    calls: tuple[CallFact, ...] = ()
    seconds: float = 0.0
    """Wall time of the judgment."""
    expected_scores: Mapping[str, float] = field(default_factory=dict)
    swapped: Verdict | None = None
    """The decision with the files in another order; None when not judged again."""
    swap_calls: tuple[CallFact, ...] = ()
    swap_seconds: float = 0.0


@dataclass(frozen=True)
class Failed:
    """A labelled change whose judgment raised instead of giving a record."""

    name: str
    expected: Verdict
    error: str
    """The exception's type and message, credentials redacted."""


def agrees(expected: Verdict, decision: Verdict) -> bool:
    """Whether a decision (not undetermined) matches the label."""
    if expected is Verdict.ACCEPT:
        return decision is Verdict.ACCEPT
    return decision in NOT_ACCEPTED


@dataclass(frozen=True)
class Agreement:
    """A set of verdicts against their labels."""

    judged: int
    decided: int
    accuracy: Rate
    false_positives: Rate
    false_negatives: Rate
    undetermined: Rate


def agreement(pairs: Iterable[tuple[Verdict, Verdict | None]]) -> Agreement:
    """(label, verdict) pairs, a verdict of None or UNDETERMINED counting as undetermined."""
    judged = 0
    accuracy, undetermined, mistakes = Rate(), Rate(), Mistakes()
    for expected, verdict in pairs:
        judged += 1
        settled = decided(verdict)
        undetermined = undetermined.plus(not settled)
        if verdict is None or not settled:
            continue
        accuracy = accuracy.plus(agrees(expected, verdict))
        mistakes = mistakes.plus(verdict, expected)
    return Agreement(
        judged,
        accuracy.total,
        accuracy,
        mistakes.false_positives,
        mistakes.false_negatives,
        undetermined,
    )


def cohen_kappa(pairs: Sequence[tuple[Verdict, Verdict]]) -> float | None:
    """Cohen's kappa of two raters' categories; None when it is undefined (no pair, or
    chance agreement is certain)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a is b for a, b in pairs) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    chance = sum(first[k] * second[k] for k in first) / (n * n)
    if chance == 1:
        return None
    return (observed - chance) / (1 - chance)


@dataclass(frozen=True)
class TierPair:
    first: str
    second: str
    both_answered: int
    agreed: Rate
    kappa: float | None


def answered_by_tier(judged: JudgedExample) -> dict[str, Verdict]:
    """Each tier's answered verdict in one judgment (its last round, should it run twice)."""
    return {r.tier: r.verdict for r in judged.rounds if r.verdict is not None}


def tier_pairs(items: Sequence[JudgedExample]) -> list[TierPair]:
    """Kappa for every two tiers that both answered at least once, in protocol order."""
    answers = [answered_by_tier(j) for j in items]
    tiers = sorted({t for a in answers for t in a}, key=lambda t: (TIER_RANK.get(t, 9), t))
    pairs = []
    for first, second in combinations(tiers, 2):
        both = [(a[first], a[second]) for a in answers if first in a and second in a]
        agreed = Rate(sum(x is y for x, y in both), len(both))
        pairs.append(TierPair(first, second, len(both), agreed, cohen_kappa(both)))
    return pairs


@dataclass(frozen=True)
class CallUsage:
    """Model calls: how many, how many attempts got an answer, latency, tokens, cost."""

    calls: int
    availability: Rate
    latency_median_s: float | None
    latency_p95_s: float | None
    tokens: int
    cost: float | None
    unpriced_tokens: int


def usage(calls: Sequence[CallFact], prices: Mapping[str, float]) -> CallUsage:
    """Figures of these calls, latency per call."""
    available = Availability()
    spend = Spend()
    for call in calls:
        available.add(call)
        spend.add(call.tokens, prices.get(call.model))
    median, p95 = median_and_p95([c.latency_ms / 1000 for c in calls])
    return CallUsage(
        calls=len(calls),
        availability=available.rate,
        latency_median_s=median,
        latency_p95_s=p95,
        tokens=spend.tokens,
        cost=spend.money,
        unpriced_tokens=spend.unpriced_tokens,
    )


@dataclass(frozen=True)
class SeatFigures:
    """One tier's model: its rounds against the labels and its calls."""

    tier: str
    model: str
    rounds: int
    failed: int
    agreement: Agreement
    usage: CallUsage


def per_seat(items: Sequence[JudgedExample], prices: Mapping[str, float]) -> list[SeatFigures]:
    rounds: dict[tuple[str, str], list[tuple[Verdict, Verdict | None]]] = defaultdict(list)
    calls: dict[tuple[str, str], list[CallFact]] = defaultdict(list)
    for judged in items:
        for r in judged.rounds:
            rounds[(r.tier, r.model)].append((judged.expected, r.verdict))
        for call in judged.calls:
            calls[(call.tier, call.model)].append(call)
    seats = sorted(set(rounds) | set(calls), key=lambda s: (TIER_RANK.get(s[0], 9), s))
    return [
        SeatFigures(
            tier=tier,
            model=model,
            rounds=len(rounds[(tier, model)]),
            failed=sum(v is None for _, v in rounds[(tier, model)]),
            agreement=agreement(rounds[(tier, model)]),
            usage=usage(calls[(tier, model)], prices),
        )
        for tier, model in seats
    ]


@dataclass(frozen=True)
class PerChange:
    """What one change costs the panel (the first judgment, not the swapped one)."""

    latency_median_s: float | None
    latency_p95_s: float | None
    wall_median_s: float | None
    calls_mean: float | None
    tokens_mean: float | None
    cost_mean: float | None
    """Mean cost over the changes; None when no call had a price."""


def per_change(items: Sequence[JudgedExample], prices: Mapping[str, float]) -> PerChange:
    called = [j for j in items if j.calls]
    latency = median_and_p95([sum(c.latency_ms for c in j.calls) / 1000 for j in called])
    wall, _ = median_and_p95([j.seconds for j in items])
    spend = Spend()
    for judged in items:
        for call in judged.calls:
            spend.add(call.tokens, prices.get(call.model))
    count = len(items)
    money = spend.money
    return PerChange(
        latency_median_s=latency[0],
        latency_p95_s=latency[1],
        wall_median_s=wall,
        calls_mean=sum(len(j.calls) for j in items) / count if count else None,
        tokens_mean=spend.tokens / count if count else None,
        cost_mean=None if money is None or not count else money / count,
    )


@dataclass(frozen=True)
class ScoreError:
    dimension: str
    compared: int
    mean_absolute_error: float
    mean_difference: float


def deciding_scores(judged: JudgedExample) -> Mapping[str, float]:
    """The scores of the last round that answered (the one the label is read from)."""
    deciding = deciding_round(judged.rounds)
    return deciding.scores if deciding is not None else {}


def score_errors(items: Sequence[JudgedExample]) -> list[ScoreError]:
    differences: dict[str, list[float]] = defaultdict(list)
    for judged in items:
        scores = deciding_scores(judged)
        for dimension, wanted in judged.expected_scores.items():
            if dimension in scores:
                differences[dimension].append(scores[dimension] - wanted)
    return [
        ScoreError(
            dimension=name,
            compared=len(values),
            mean_absolute_error=sum(abs(v) for v in values) / len(values),
            mean_difference=sum(values) / len(values),
        )
        for name, values in sorted(differences.items())
    ]


@dataclass(frozen=True)
class Evaluation:
    changes: int
    expected: dict[str, int]
    decisions: dict[str, int]
    labels: dict[str, int]
    agreement: Agreement
    go: Rate
    tiers: list[TierPair]
    swap: Rate
    """Judged again in another order with the same decision, over those judged again
    with a decision in both orders."""
    swap_skipped: int
    """Changes not judged again: one file only, or swapping turned off."""
    swap_undetermined: int
    """Changes judged again whose decision was undetermined in either order."""
    per_change: PerChange
    seats: list[SeatFigures]
    scores: list[ScoreError]
    calls: int
    """Every model call the evaluation made (a round's, retries included in one), swapped
    judgments included."""
    requests: int
    """The requests those calls sent (each retry is one more)."""
    seconds: float
    """Wall time of every judgment, swapped ones included (concurrent ones overlap)."""
    failed: list[Failed] = field(default_factory=list)
    """Changes whose judgment raised: in no figure above."""


def decided(verdict: Verdict | None) -> bool:
    return verdict is not None and verdict is not Verdict.UNDETERMINED


def evaluate(outcomes: Sequence[JudgedExample | Failed], prices: Mapping[str, float]) -> Evaluation:
    items = [j for j in outcomes if isinstance(j, JudgedExample)]
    swapped = [j for j in items if j.swapped is not None]
    both = [j for j in swapped if decided(j.swapped) and decided(j.decision)]
    return Evaluation(
        changes=len(items),
        expected=dict(Counter(j.expected.value for j in items)),
        decisions=dict(Counter(j.decision.value for j in items)),
        labels=dict(Counter(j.label for j in items)),
        agreement=agreement((j.expected, j.decision) for j in items),
        go=Rate(sum(j.label == "GO" for j in items), len(items)),
        tiers=tier_pairs(items),
        swap=Rate(sum(j.swapped is j.decision for j in both), len(both)),
        swap_skipped=len(items) - len(swapped),
        swap_undetermined=len(swapped) - len(both),
        per_change=per_change(items, prices),
        seats=per_seat(items, prices),
        scores=score_errors(items),
        calls=sum(len(j.calls) + len(j.swap_calls) for j in items),
        requests=sum(c.attempts for j in items for c in (*j.calls, *j.swap_calls)),
        seconds=sum(j.seconds + j.swap_seconds for j in items),
        failed=[f for f in outcomes if isinstance(f, Failed)],
    )
