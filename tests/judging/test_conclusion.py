"""The `judge` check run's conclusion for every verdict, mode and cause."""

from __future__ import annotations

import itertools

import pytest

from bot.judge.config import Mode
from bot.judge.engine.judgment import admission_refused
from bot.judge.engine.rounds import attempt_refusal
from bot.judge.records import Tier, Verdict
from bot.judging.conclusion import (
    REFUSALS,
    VERDICT_SEVERITY,
    Cause,
    cause_of,
    combined_verdict,
    conclusion_for,
    run_cause,
    run_conclusion,
)
from tests.support.verdict_builders import make_record, make_round, make_unjudged

CONCLUSIONS = {
    (Verdict.ACCEPT, Mode.ADVISORY): "success",
    (Verdict.ACCEPT, Mode.BLOCKING): "success",
    (Verdict.IMPROVE, Mode.ADVISORY): "neutral",
    (Verdict.IMPROVE, Mode.BLOCKING): "failure",
    (Verdict.REJECT, Mode.ADVISORY): "neutral",
    (Verdict.REJECT, Mode.BLOCKING): "failure",
    (Verdict.ESCALATE, Mode.ADVISORY): "neutral",
    (Verdict.ESCALATE, Mode.BLOCKING): "action_required",
    (Verdict.UNDETERMINED, Mode.ADVISORY): "neutral",
    (Verdict.UNDETERMINED, Mode.BLOCKING): "neutral",
}


def test_conclusion_table_covers_every_verdict_and_mode() -> None:
    assert set(CONCLUSIONS) == set(itertools.product(Verdict, Mode))


@pytest.mark.parametrize(("verdict", "mode"), list(CONCLUSIONS))
def test_conclusion_for(verdict: Verdict, mode: Mode) -> None:
    """Only accept succeeds; only blocking mode fails; undetermined never fails."""
    assert conclusion_for(verdict, mode) == CONCLUSIONS[(verdict, mode)]


def test_undetermined_never_fails() -> None:
    assert {conclusion_for(Verdict.UNDETERMINED, m) for m in Mode} == {"neutral"}


@pytest.mark.parametrize(("a", "b"), list(itertools.product(Verdict, Verdict)))
def test_combined_verdict_is_the_worst(a: Verdict, b: Verdict) -> None:
    """reject > escalate > improve > undetermined > accept, whatever the order."""
    expected = a if VERDICT_SEVERITY.index(a) <= VERDICT_SEVERITY.index(b) else b
    assert combined_verdict([a, b]) is expected
    assert combined_verdict([b, a]) is expected


def test_combined_verdict_order_and_empty() -> None:
    assert VERDICT_SEVERITY == (
        Verdict.REJECT,
        Verdict.ESCALATE,
        Verdict.IMPROVE,
        Verdict.UNDETERMINED,
        Verdict.ACCEPT,
    )
    assert set(VERDICT_SEVERITY) == set(Verdict)
    assert combined_verdict([]) is Verdict.UNDETERMINED
    assert combined_verdict([Verdict.ACCEPT] * 3) is Verdict.ACCEPT


# --- why a verdict was reached, and the run's conclusion ------------------------------

# Throttle and budget refusals are the only causes that change a conclusion: an author
# can exhaust them on purpose, so in blocking mode they ask for a maintainer instead of
# passing. Every other row is `conclusion_for`: an outage (the judges were asked and
# failed) stays neutral in both modes, the seeds' fail-open rule.
UNDETERMINED_BY_CAUSE = {
    (Mode.BLOCKING, Cause.JUDGES): "neutral",
    (Mode.BLOCKING, Cause.THROTTLED): "action_required",
    (Mode.BLOCKING, Cause.BUDGET): "action_required",
    (Mode.BLOCKING, Cause.UNCONFIGURED): "neutral",
    (Mode.BLOCKING, Cause.FOUR_EYES): "action_required",
    (Mode.BLOCKING, Cause.MECHANICAL): "neutral",
    (Mode.ADVISORY, Cause.JUDGES): "neutral",
    (Mode.ADVISORY, Cause.THROTTLED): "neutral",
    (Mode.ADVISORY, Cause.BUDGET): "neutral",
    (Mode.ADVISORY, Cause.UNCONFIGURED): "neutral",
    (Mode.ADVISORY, Cause.FOUR_EYES): "neutral",
    (Mode.ADVISORY, Cause.MECHANICAL): "neutral",
}


def test_cause_table_covers_every_mode_and_cause() -> None:
    assert set(UNDETERMINED_BY_CAUSE) == set(itertools.product(Mode, Cause))


@pytest.mark.parametrize(
    ("verdict", "mode", "cause"), list(itertools.product(Verdict, Mode, Cause))
)
def test_run_conclusion_for_every_verdict_mode_and_cause(
    verdict: Verdict, mode: Mode, cause: Cause
) -> None:
    expected = (
        UNDETERMINED_BY_CAUSE[(mode, cause)]
        if verdict is Verdict.UNDETERMINED
        else CONCLUSIONS[(verdict, mode)]
    )
    assert run_conclusion(verdict, mode, cause) == expected


def test_a_refusal_never_passes_a_blocking_check() -> None:
    for cause in REFUSALS:
        assert run_conclusion(Verdict.UNDETERMINED, Mode.BLOCKING, cause) not in (
            "success",
            "neutral",
            "skipped",
        )
    assert {Cause.THROTTLED, Cause.BUDGET, Cause.FOUR_EYES} == REFUSALS


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("throttled", Cause.THROTTLED),
        ("budget", Cause.BUDGET),
        ("unconfigured", Cause.UNCONFIGURED),
        ("four-eyes", Cause.FOUR_EYES),
        ("mechanical", Cause.MECHANICAL),
        ("quick", Cause.JUDGES),
        ("deep", Cause.JUDGES),
        ("none", Cause.JUDGES),
        ("human", Cause.JUDGES),
    ],
)
def test_cause_of_reads_the_record_mode(mode: str, cause: Cause) -> None:
    assert cause_of(make_unjudged(mode=mode)) is cause


def test_the_engine_writes_the_modes_cause_of_reads() -> None:
    """The modes come from bot.judge.engine.judgment; a renamed one would silently fail open."""
    assert cause_of(make_unjudged(mode=admission_refused("throttled: 21 in the hour").mode)) is (
        Cause.THROTTLED
    )
    assert cause_of(make_unjudged(mode=admission_refused("daily budget exhausted").mode)) is (
        Cause.BUDGET
    )


def test_a_budget_cut_mid_judgment_is_a_budget_refusal() -> None:
    """The day's calls ran out between rounds: the judges were not failing, the budget
    stopped them, so the record counts as a budget refusal, not an outage."""
    cut = attempt_refusal(remaining=60.0, calls_left=0)
    assert cut is not None
    failed = make_round(verdict=None, scores={}, average=None, error=cut.error)
    record = make_unjudged(mode="quick", round=1, judge_tier=Tier.QUICK, previous_rounds=[failed])
    assert cause_of(record) is Cause.BUDGET
    timed_out = make_round(verdict=None, scores={}, average=None, error="timeout after 30s")
    outage = make_unjudged(
        mode="quick", round=1, judge_tier=Tier.QUICK, previous_rounds=[timed_out]
    )
    assert cause_of(outage) is Cause.JUDGES
    wall_clock = attempt_refusal(remaining=0.0, calls_left=5)
    assert wall_clock is not None
    slow = make_round(verdict=None, scores={}, average=None, error=wall_clock.error)
    assert cause_of(make_unjudged(mode="quick", previous_rounds=[slow])) is Cause.JUDGES


def test_run_cause_prefers_a_refusal_among_the_undetermined_groups() -> None:
    outage = make_unjudged(mode="quick")
    throttled = make_unjudged(mode="throttled")
    accepted = make_record()
    assert run_cause([accepted, outage, throttled]) is Cause.THROTTLED
    assert run_cause([outage, accepted]) is Cause.JUDGES
    assert run_cause([make_unjudged(mode="budget"), throttled]) is Cause.BUDGET
    # Only the groups behind the combined verdict count: a reject outweighs the refusal.
    rejected = make_record(verdict=Verdict.REJECT, final_decision=Verdict.REJECT)
    assert run_cause([throttled, rejected]) is Cause.JUDGES
    assert run_cause([]) is Cause.JUDGES
