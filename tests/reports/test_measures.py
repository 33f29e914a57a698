"""The counting under every figure: rates, percentiles, availability, spend, and the
false-positive and false-negative rules, as tables."""

from __future__ import annotations

import pytest

from bot.judge.records import Verdict
from bot.reports.facts import CallFact
from bot.reports.measures import (
    Availability,
    Mistakes,
    Rate,
    Spend,
    false_negative,
    false_positive,
    median_and_p95,
)

A, IM, R, E, U = (
    Verdict.ACCEPT,
    Verdict.IMPROVE,
    Verdict.REJECT,
    Verdict.ESCALATE,
    Verdict.UNDETERMINED,
)


@pytest.mark.parametrize(
    ("judged", "human", "fp", "fn"),
    [
        (A, None, (False, False), (True, False)),
        (A, A, (False, False), (True, False)),
        (A, R, (False, False), (True, True)),
        (IM, A, (True, True), (False, False)),
        (IM, None, (True, False), (False, False)),
        (R, A, (True, True), (False, False)),
        (R, R, (True, False), (False, False)),
        (E, A, (True, True), (False, False)),
        (U, A, (False, False), (False, False)),
        (None, A, (False, False), (False, False)),
    ],
)
def test_false_positive_and_negative_rules(
    judged: Verdict | None,
    human: Verdict | None,
    fp: tuple[bool, bool],
    fn: tuple[bool, bool],
) -> None:
    assert false_positive(judged, human) == fp
    assert false_negative(judged, human) == fn


@pytest.mark.parametrize(
    ("values", "share", "expected"),
    [
        ([], 0.5, None),
        ([7.0], 0.5, 7.0),
        ([7.0], 0.95, 7.0),
        ([3.0, 1.0, 2.0], 0.5, 2.0),
        ([4.0, 1.0, 3.0, 2.0], 0.5, 2.5),
        ([float(n) for n in range(1, 21)], 0.95, 19.0),
        ([float(n) for n in range(1, 101)], 0.95, 95.0),
        ([1.0, 2.0], 0.95, 2.0),
    ],
)
def test_percentile(values: list[float], share: float, expected: float | None) -> None:
    median, p95 = median_and_p95(values)
    assert (median if share == 0.5 else p95) == expected


def test_rate() -> None:
    assert Rate().value is None
    assert Rate(1, 4).value == 0.25
    assert Rate(1, 4).plus(True) == Rate(2, 5)
    assert Rate(1, 4).plus(False) == Rate(1, 5)
    assert Rate(1, 4).plus(True, considered=False) == Rate(1, 4)
    assert Rate(1, 4).plus(True, times=3) == Rate(4, 7)
    assert Rate(1, 4).plus(False, times=3) == Rate(1, 7)
    assert Rate(1, 4).plus(True, considered=False, times=3) == Rate(1, 4)
    assert Rate(1, 4) + Rate(2, 3) == Rate(3, 7)


def test_mistakes_count_both_rules_at_once() -> None:
    """The false-positive and false-negative rates of verdicts against the right ones,
    each verdict counted `times` and by the rules above; tallies add up."""
    tally = Mistakes()
    for judged, human, times in ((A, R, 2), (A, None, 1), (R, A, 3), (IM, None, 1), (U, A, 5)):
        tally = tally.plus(judged, human, times)
    assert tally == Mistakes(false_positives=Rate(3, 4), false_negatives=Rate(2, 3))
    assert tally + Mistakes(Rate(1, 1), Rate(0, 2)) == Mistakes(Rate(4, 5), Rate(2, 5))
    assert Mistakes().plus(None, A) == Mistakes()


def call(tokens: int = 100, attempts: int = 1, ok: bool = True) -> CallFact:
    return CallFact("quick", "m", 10.0, tokens, attempts, ok)


def test_availability_counts_attempts() -> None:
    seen = Availability()
    for item in (call(), call(attempts=2), call(attempts=2, ok=False), call(attempts=0, ok=True)):
        seen.add(item)
    assert seen.rate == Rate(2, 5)


def test_spend_prices_only_priced_models() -> None:
    assert Spend().money is None
    spend = Spend()
    spend.add(2000, 0.5)
    spend.add(300, None)
    assert (spend.tokens, spend.unpriced_tokens, spend.money) == (2300, 300, 1.0)
