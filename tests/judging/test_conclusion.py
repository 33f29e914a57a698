"""The `judge` check run's conclusion for every verdict and mode."""

from __future__ import annotations

import itertools

import pytest

from bot.judge.config import Mode
from bot.judge.records import Verdict
from bot.judging.conclusion import VERDICT_SEVERITY, combined_verdict, conclusion_for

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
