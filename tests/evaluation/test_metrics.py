"""The evaluation's figures, each against a value worked out by hand."""

from __future__ import annotations

import pytest

from bot.evaluation.metrics import (
    Failed,
    JudgedExample,
    RoundOutcome,
    agreement,
    agrees,
    cohen_kappa,
    deciding_scores,
    evaluate,
    per_change,
    per_seat,
    score_errors,
    tier_pairs,
    usage,
)
from bot.judge.records import Verdict
from bot.reports.facts import CallFact
from bot.reports.measures import Rate

A, IM, R, E, U = (
    Verdict.ACCEPT,
    Verdict.IMPROVE,
    Verdict.REJECT,
    Verdict.ESCALATE,
    Verdict.UNDETERMINED,
)


@pytest.mark.parametrize(
    ("expected", "decision", "agreed"),
    [
        (A, A, True),
        (A, IM, False),
        (A, R, False),
        (A, E, False),
        (R, A, False),
        (R, IM, True),
        (R, R, True),
        (R, E, True),
    ],
)
def test_a_decision_agrees_with_its_label(
    expected: Verdict, decision: Verdict, agreed: bool
) -> None:
    assert agrees(expected, decision) is agreed


def test_agreement_counts_as_calibration_does() -> None:
    pairs = [(A, A), (A, IM), (R, R), (R, A), (R, E), (A, U), (A, A)]
    got = agreement(pairs)
    assert got.judged == 7
    assert got.decided == 6
    assert got.accuracy == Rate(4, 6)  # 1st, 3rd, 5th, 7th
    # FP: over the three changes not accepted (improve, reject, escalate), one was labelled accept
    assert got.false_positives == Rate(1, 3)
    # FN: over the three changes accepted, one was labelled reject
    assert got.false_negatives == Rate(1, 3)
    assert got.undetermined == Rate(1, 7)


def test_a_failed_round_counts_as_undetermined() -> None:
    got = agreement([(A, None), (R, R)])
    assert got.undetermined == Rate(1, 2)
    assert got.accuracy == Rate(1, 1)
    assert got.false_negatives == Rate(0, 0)


def test_agreement_of_nothing_is_empty() -> None:
    got = agreement([])
    assert (got.judged, got.decided) == (0, 0)
    assert got.accuracy.value is None and got.undetermined.value is None


def test_kappa_of_the_textbook_table() -> None:
    """20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: po 0.7, pe 0.5, kappa 0.4."""
    pairs = [(A, A)] * 20 + [(A, R)] * 5 + [(R, A)] * 10 + [(R, R)] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_kappa_of_three_categories() -> None:
    """po 4/6; first A3 I2 R1, second A2 I2 R2: pe 12/36; kappa (2/3-1/3)/(2/3) = 0.5."""
    pairs = [(A, A), (A, A), (A, IM), (IM, IM), (IM, R), (R, R)]
    assert cohen_kappa(pairs) == pytest.approx(0.5)


def test_kappa_of_perfect_and_of_opposite_raters() -> None:
    assert cohen_kappa([(A, A), (R, R)]) == pytest.approx(1.0)
    assert cohen_kappa([(A, R), (R, A)]) == pytest.approx(-1.0)


def test_kappa_is_undefined_without_pairs_or_when_chance_is_certain() -> None:
    assert cohen_kappa([]) is None
    assert cohen_kappa([(A, A), (A, A)]) is None


def judged(
    expected: Verdict = A,
    decision: Verdict = A,
    rounds: tuple[RoundOutcome, ...] = (),
    calls: tuple[CallFact, ...] = (),
    **extra: object,
) -> JudgedExample:
    label = {A: "GO", U: "UNDETERMINED"}.get(decision, "NO-GO")
    return JudgedExample(
        name="x",
        expected=expected,
        decision=decision,
        label=label,  # type: ignore[arg-type]
        rounds=rounds,
        calls=calls,
        **extra,  # type: ignore[arg-type]
    )


def rnd(tier: str, verdict: Verdict | None, model: str = "m", **scores: float) -> RoundOutcome:
    return RoundOutcome(tier=tier, model=model, verdict=verdict, scores=scores)


def call(
    tier: str, model: str, ms: float, tokens: int = 0, attempts: int = 1, ok: bool = True
) -> CallFact:
    return CallFact(tier, model, ms, tokens, attempts, ok)


def test_tier_pairs_count_only_changes_both_tiers_answered() -> None:
    items = [
        judged(rounds=(rnd("quick", A), rnd("deep", A))),
        judged(rounds=(rnd("quick", IM), rnd("deep", R))),
        judged(rounds=(rnd("quick", R), rnd("deep", None))),  # deep failed
        judged(rounds=(rnd("quick", A),)),
        judged(rounds=(rnd("quick", A), rnd("deep", R), rnd("tiebreaker", R))),
    ]
    quick_deep, quick_tie, deep_tie = tier_pairs(items)
    assert (quick_deep.first, quick_deep.second) == ("quick", "deep")
    assert quick_deep.both_answered == 3
    assert quick_deep.agreed == Rate(1, 3)
    # (A,A) (IM,R) (A,R): po 1/3; quick A2 I1, deep A1 R2: pe 2/9; kappa (3/9-2/9)/(7/9) = 1/7
    assert quick_deep.kappa == pytest.approx(1 / 7)
    assert (quick_tie.first, quick_tie.second, quick_tie.both_answered) == (
        "quick",
        "tiebreaker",
        1,
    )
    assert quick_tie.kappa == pytest.approx(0.0)  # (A, R): po 0, pe 0
    assert (deep_tie.first, deep_tie.second, deep_tie.agreed) == ("deep", "tiebreaker", Rate(1, 1))


def test_tier_pairs_need_two_tiers() -> None:
    assert tier_pairs([judged(rounds=(rnd("quick", A),))]) == []
    assert tier_pairs([]) == []


def test_usage_of_calls_with_and_without_prices() -> None:
    calls = [
        call("quick", "a", 1000, tokens=1000),
        call("quick", "a", 3000, tokens=500, attempts=2),
        call("quick", "a", 2000, tokens=0, attempts=2, ok=False),
    ]
    got = usage(calls, {"a": 0.002})
    assert got.calls == 3
    assert got.availability == Rate(2, 5)  # 2 usable answers over 5 requests
    assert got.latency_median_s == pytest.approx(2.0)
    assert got.latency_p95_s == pytest.approx(3.0)
    assert got.tokens == 1500
    assert got.cost == pytest.approx(0.003)
    assert got.unpriced_tokens == 0
    unpriced = usage(calls, {})
    assert unpriced.cost is None and unpriced.unpriced_tokens == 1500


def test_per_seat_figures() -> None:
    items = [
        judged(A, A, rounds=(rnd("quick", A, "q"),), calls=(call("quick", "q", 100, 10),)),
        judged(
            R,
            R,
            rounds=(rnd("quick", A, "q"), rnd("deep", R, "d")),
            calls=(call("quick", "q", 300, 10), call("deep", "d", 900, 40)),
        ),
        judged(
            A,
            U,
            rounds=(rnd("quick", None, "q"),),
            calls=(call("quick", "q", 200, 0, attempts=2, ok=False),),
        ),
    ]
    quick, deep = per_seat(items, {"d": 1.0})
    assert (quick.tier, quick.model, quick.rounds, quick.failed) == ("quick", "q", 3, 1)
    assert quick.agreement.accuracy == Rate(1, 2)
    assert quick.agreement.false_negatives == Rate(1, 2)  # accepted the rejected change
    assert quick.agreement.false_positives == Rate(0, 0)
    assert quick.agreement.undetermined == Rate(1, 3)
    assert quick.usage.latency_median_s == pytest.approx(0.2)
    assert quick.usage.availability == Rate(2, 4)
    assert quick.usage.cost is None
    assert (deep.tier, deep.model, deep.rounds, deep.failed) == ("deep", "d", 1, 0)
    assert deep.agreement.accuracy == Rate(1, 1)
    assert deep.usage.cost == pytest.approx(0.04)


def test_per_seat_orders_tiers_as_the_protocol_runs_them() -> None:
    items = [judged(rounds=(rnd("tiebreaker", A, "t"), rnd("deep", A, "d"), rnd("quick", A, "q")))]
    assert [s.tier for s in per_seat(items, {})] == ["quick", "deep", "tiebreaker"]


def test_per_change_figures() -> None:
    items = [
        judged(calls=(call("quick", "q", 1000, 100), call("deep", "d", 2000, 300)), seconds=3.5),
        judged(calls=(call("quick", "q", 500, 100),), seconds=0.6),
        judged(calls=(), seconds=0.1),  # settled without a model
    ]
    got = per_change(items, {"q": 1.0})
    # latency per change that called a model: 3.0 s and 0.5 s
    assert got.latency_median_s == pytest.approx(1.75)
    assert got.latency_p95_s == pytest.approx(3.0)
    assert got.wall_median_s == pytest.approx(0.6)
    assert got.calls_mean == pytest.approx(1.0)
    assert got.tokens_mean == pytest.approx(500 / 3)
    assert got.cost_mean == pytest.approx(0.2 / 3)  # 200 priced tokens at 1.0 per 1k
    assert per_change(items, {}).cost_mean is None


def test_per_change_of_nothing() -> None:
    got = per_change([], {})
    assert got.latency_median_s is None and got.wall_median_s is None
    assert got.calls_mean is None and got.tokens_mean is None and got.cost_mean is None


def test_score_errors_read_the_deciding_round() -> None:
    items = [
        judged(
            rounds=(rnd("quick", A, semantic=5, pragmatic=2), rnd("deep", A, semantic=4)),
            expected_scores={"semantic": 3, "pragmatic": 4},
        ),
        judged(
            rounds=(rnd("quick", R, semantic=1, pragmatic=1), rnd("deep", None)),
            expected_scores={"semantic": 2, "pragmatic": 4},
        ),
        judged(rounds=(rnd("quick", None),), expected_scores={"semantic": 1}),
    ]
    assert deciding_scores(items[0]) == {"semantic": 4}
    assert deciding_scores(items[2]) == {}
    pragmatic, semantic = score_errors(items)
    # semantic: 4-3 = +1 and 1-2 = -1; pragmatic: only the second change, 1-4 = -3
    assert (semantic.dimension, semantic.compared) == ("semantic", 2)
    assert semantic.mean_absolute_error == pytest.approx(1.0)
    assert semantic.mean_difference == pytest.approx(0.0)
    assert (pragmatic.dimension, pragmatic.compared) == ("pragmatic", 1)
    assert pragmatic.mean_absolute_error == pytest.approx(3.0)
    assert pragmatic.mean_difference == pytest.approx(-3.0)


def test_evaluate_puts_it_together() -> None:
    items = [
        judged(
            A,
            A,
            rounds=(rnd("quick", A, "q"),),
            calls=(call("quick", "q", 1000, 100),),
            seconds=1.0,
            swapped=A,
            swap_calls=(call("quick", "q", 1000, 100, attempts=2),),
            swap_seconds=1.5,
        ),
        judged(
            R,
            A,
            rounds=(rnd("quick", A, "q"),),
            calls=(call("quick", "q", 2000, 100),),
            seconds=2.0,
            swapped=IM,
            swap_calls=(call("quick", "q", 1000, 100),),
            swap_seconds=1.0,
        ),
        judged(R, U, rounds=(rnd("quick", None, "q"),), calls=(), seconds=0.5),
    ]
    report = evaluate(items, {})
    assert report.changes == 3
    assert report.expected == {"accept": 1, "reject": 2}
    assert report.decisions == {"accept": 2, "undetermined": 1}
    assert report.labels == {"GO": 2, "UNDETERMINED": 1}
    assert report.go == Rate(2, 3)
    assert report.agreement.accuracy == Rate(1, 2)
    assert report.swap == Rate(1, 2)
    assert report.swap_skipped == 1
    assert report.calls == 4
    assert report.requests == 5
    assert report.seconds == pytest.approx(6.0)
    assert [s.model for s in report.seats] == ["q"]
    assert report.tiers == [] and report.scores == []


def test_swap_consistency_leaves_out_undetermined_pairs_and_counts_them() -> None:
    """An outage in either order says nothing about position bias: such a pair is
    neither consistent nor inconsistent, and is counted on its own."""
    items = [
        judged(A, A, swapped=A),
        judged(A, A, swapped=IM),  # position bias
        judged(A, A, swapped=U),  # the other order went unanswered
        judged(R, U, swapped=R),  # the first order went unanswered
        judged(R, U, swapped=U),
        judged(R, R),  # one file: not judged again
    ]
    report = evaluate(items, {})
    assert report.swap == Rate(1, 2)
    assert report.swap_undetermined == 3
    assert report.swap_skipped == 1


def test_a_change_that_failed_is_counted_apart_from_the_figures() -> None:
    failed = Failed(name="broken", expected=R, error="ValueError: bad file")
    report = evaluate([judged(A, A), failed, judged(R, R)], {})
    assert report.changes == 2
    assert report.expected == {"accept": 1, "reject": 1}
    assert report.agreement.accuracy == Rate(2, 2)
    assert report.failed == [failed]
