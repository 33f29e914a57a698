"""The counting shared by every calibration figure: rates, latency percentiles, spend,
and when a verdict was a false positive or a false negative. Pure.

False positive: the judges did not accept (improve, reject or escalate: each holds a
blocking check back) and a person overrode to accept. False negative: the judges
accepted and a person overrode to reject. Undetermined is neither: nobody judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bot.judge.records import Verdict
from bot.reports.facts import CallFact

NOT_ACCEPTED = frozenset({Verdict.IMPROVE, Verdict.REJECT, Verdict.ESCALATE})


@dataclass(frozen=True, slots=True)
class Rate:
    count: int = 0
    total: int = 0

    @property
    def value(self) -> float | None:
        """count / total; None when there is nothing to divide (no case to judge by)."""
        return None if self.total == 0 else self.count / self.total

    def plus(self, counted: bool, considered: bool = True, times: int = 1) -> Rate:
        """`times` more cases alike; cases not considered leave the rate as it was."""
        if not considered:
            return self
        return Rate(self.count + int(counted) * times, self.total + times)

    def __add__(self, other: Rate) -> Rate:
        return Rate(self.count + other.count, self.total + other.total)


def false_positive(judged: Verdict | None, human: Verdict | None) -> tuple[bool, bool]:
    """(counts towards the false-positive rate, is one)."""
    considered = judged in NOT_ACCEPTED
    return considered, considered and human is Verdict.ACCEPT


def false_negative(judged: Verdict | None, human: Verdict | None) -> tuple[bool, bool]:
    """(counts towards the false-negative rate, is one)."""
    considered = judged is Verdict.ACCEPT
    return considered, considered and human is Verdict.REJECT


@dataclass(frozen=True, slots=True)
class Mistakes:
    """Verdicts against what they should have been (a person's override, or an evaluation
    dataset's label): the false-positive and false-negative rates, counted as above."""

    false_positives: Rate = Rate()
    false_negatives: Rate = Rate()

    def plus(self, judged: Verdict | None, human: Verdict | None, times: int = 1) -> Mistakes:
        """`times` more verdicts `judged` where `human` was the right one."""
        fp_considered, fp = false_positive(judged, human)
        fn_considered, fn = false_negative(judged, human)
        return Mistakes(
            self.false_positives.plus(fp, fp_considered, times),
            self.false_negatives.plus(fn, fn_considered, times),
        )

    def __add__(self, other: Mistakes) -> Mistakes:
        return Mistakes(
            self.false_positives + other.false_positives,
            self.false_negatives + other.false_negatives,
        )


def median_and_p95(values: Sequence[float]) -> tuple[float | None, float | None]:
    """The median and the 95th percentile, None without values. Nearest rank (the
    smallest value with at least that share of the values at or below it); the median of
    an even count is the mean of the middle two."""
    if not values:
        return None, None
    ordered = sorted(values)
    return _ranked(ordered, 0.5), _ranked(ordered, 0.95)


def _ranked(ordered: Sequence[float], share: float) -> float:
    if share == 0.5 and len(ordered) % 2 == 0:
        middle = len(ordered) // 2
        return (ordered[middle - 1] + ordered[middle]) / 2
    rank = max(math.ceil(share * len(ordered)), 1)
    return ordered[rank - 1]


@dataclass
class Spend:
    """Tokens of model calls, and their price where one is configured for the model."""

    tokens: int = 0
    priced_tokens: int = 0
    cost: float = 0.0

    def add(self, tokens: int, price_per_1k: float | None) -> None:
        self.tokens += tokens
        if price_per_1k is not None:
            self.priced_tokens += tokens
            self.cost += tokens * price_per_1k / 1000

    def merge(self, other: Spend) -> None:
        self.tokens += other.tokens
        self.priced_tokens += other.priced_tokens
        self.cost += other.cost

    @property
    def unpriced_tokens(self) -> int:
        return self.tokens - self.priced_tokens

    @property
    def money(self) -> float | None:
        """None when no call had a price: "free" and "unknown" must not look alike."""
        return self.cost if self.priced_tokens else None


@dataclass
class Availability:
    """Successful model calls over requests made: a call that answered in its second
    attempt counts one success in two attempts; a call that never got a usable answer,
    none. Calls refused before any request (budget, wall clock) are not attempts."""

    succeeded: int = 0
    attempts: int = 0

    def add(self, call: CallFact) -> None:
        self.attempts += call.attempts
        if call.ok and call.attempts:
            self.succeeded += 1

    def merge(self, other: Availability) -> None:
        self.succeeded += other.succeeded
        self.attempts += other.attempts

    @property
    def rate(self) -> Rate:
        return Rate(self.succeeded, self.attempts)
