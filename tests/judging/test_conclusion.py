"""The `judge` check run's conclusion for every verdict and mode."""

from __future__ import annotations

import itertools

import pytest

from bot.judge.config import Mode
from bot.judge.records import Verdict
from bot.judging.conclusion import conclusion_for

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
