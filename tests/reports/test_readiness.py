"""Readiness for blocking mode, check by check, at and around each limit (seed 000's
limits are strict: below 10 %, above 95 %...; the GO range is inclusive)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from bot.reports.facts import ReportWindow
from bot.reports.kpis import Figures
from bot.reports.measures import Rate
from bot.reports.readiness import days_covered, readiness
from bot.reports.thresholds import CalibrationThresholds
from tests.reports.seeded import NOW

WINDOW = ReportWindow(since=NOW - timedelta(days=14), until=NOW, days=14)
PASSING = Figures(
    scope="overall",
    judgments=100,
    decisions={},
    labels={},
    overridden=13,
    false_positives=Rate(9, 100),
    false_negatives=Rate(4, 100),
    go=Rate(80, 100),
    undetermined=Rate(14, 100),
    availability=Rate(96, 100),
    latency_median_s=29.9,
    latency_p95_s=60.0,
    agreement=Rate(),
    tokens=0,
    unpriced_tokens=0,
    cost=None,
    first_at=NOW - timedelta(days=13, hours=1),
)


@pytest.mark.parametrize(
    ("change", "kpi", "gap"),
    [
        ({}, None, None),
        ({"false_positives": Rate(10, 100)}, "false_positive_rate", 0.0),
        ({"false_positives": Rate()}, None, None),
        ({"false_negatives": Rate(5, 100)}, "false_negative_rate", 0.0),
        ({"false_negatives": Rate()}, None, None),
        ({"go": Rate(70, 100)}, None, None),
        ({"go": Rate(90, 100)}, None, None),
        ({"go": Rate(69, 100)}, "go_rate", 0.01),
        ({"go": Rate(91, 100)}, "go_rate", 0.01),
        ({"undetermined": Rate(15, 100)}, "undetermined_rate", 0.0),
        ({"availability": Rate(95, 100)}, "availability", 0.0),
        ({"availability": Rate()}, "availability", None),
        ({"latency_median_s": 30.0}, "median_latency", 0.0),
        ({"latency_median_s": 42.5}, "median_latency", 12.5),
        ({"latency_median_s": None}, "median_latency", None),
        ({"judgments": 49}, "sample", 1),
        ({"overridden": 1}, None, None),
        ({"overridden": 0}, "human_decisions", 1),
        ({"first_at": NOW - timedelta(days=12, hours=23)}, "days_covered", 1),
    ],
)
def test_each_check(change: dict[str, Any], kpi: str | None, gap: float | None) -> None:
    result = readiness(replace(PASSING, **change), CalibrationThresholds(), WINDOW)
    if kpi is None:
        assert result.ready and result.reasons == ()
        return
    (reason,) = result.reasons
    assert reason.kpi == kpi
    assert reason.gap == (None if gap is None else pytest.approx(gap))
    assert reason.message


def test_messages_say_by_how_much() -> None:
    worse = replace(PASSING, false_positives=Rate(1, 8), go=Rate(65, 100), latency_median_s=34.2)
    messages = [r.message for r in readiness(worse, CalibrationThresholds(), WINDOW).reasons]
    assert messages == [
        "false-positive rate 12.5% is not below 10.0% (over by 2.5 points)",
        "GO rate 65.0% is outside 70.0%-90.0% (under by 5.0 points)",
        "median judgment latency 34.2 s is not below 30 s (over by 4.2 s)",
    ]


def test_a_short_window_is_never_enough() -> None:
    week = ReportWindow(since=NOW - timedelta(days=7), until=NOW, days=7)
    (reason,) = readiness(PASSING, CalibrationThresholds(), week).reasons
    assert (reason.kpi, reason.value, reason.gap) == ("window_days", 7, 7)
    assert "--days 14" in reason.message


@pytest.mark.parametrize(
    ("ago", "covered"),
    [(None, 0), (timedelta(hours=1), 1), (timedelta(days=1), 2), (timedelta(days=40), 14)],
)
def test_days_covered(ago: timedelta | None, covered: int) -> None:
    assert days_covered(None if ago is None else NOW - ago, WINDOW) == covered


def test_no_judgment_leaves_the_go_rate_unknown() -> None:
    figures = replace(PASSING, go=Rate())
    (reason,) = readiness(figures, CalibrationThresholds(), WINDOW).reasons
    assert (reason.kpi, reason.value, reason.gap) == ("go_rate", None, None)


def test_no_human_decision_is_never_ready() -> None:
    """Issue 24: with nobody's decision in the sample, FP and FN read 0 % however the
    judges did, and every other KPI passing made the report say READY."""
    nobody = replace(
        PASSING, overridden=0, false_positives=Rate(0, 60), false_negatives=Rate(0, 40)
    )
    (reason,) = readiness(nobody, CalibrationThresholds(), WINDOW).reasons
    assert (reason.kpi, reason.value, reason.gap) == ("human_decisions", 0, 1)
    assert "decided by a person" in reason.message and "/judge override" in reason.message
