"""Calibration figures from a stored log with known overrides: exact values on SQLite and
PostgreSQL, through the same read the command uses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from bot.reports import sources
from bot.reports.kpis import Calibration, calibrate
from bot.reports.measures import Rate
from bot.reports.model_kpis import GroupFigures
from bot.reports.thresholds import CalibrationThresholds
from bot.storage.base import Storage
from tests.reports.seeded import NOW, SEEDED, store_all, stored_of
from tests.support.fact_builders import facts_of


async def seeded_report(
    storage: Storage, days: int = 14, repository: str | None = None, **limits: object
) -> Calibration:
    await store_all(storage, SEEDED)
    facts, unreadable = await sources.window_facts(storage, NOW - timedelta(days=days), repository)
    thresholds = CalibrationThresholds(**limits)  # type: ignore[arg-type]
    return calibrate(
        facts, thresholds, now=NOW, days=days, repository=repository, unreadable=unreadable
    )


async def test_overall_figures_are_exact(storage: Storage) -> None:
    """Nine judgments in the window; alice's override is a false positive, bob's a false
    negative, carol's is cancelled and counts for nothing."""
    f = (await seeded_report(storage)).overall.figures
    assert f.judgments == 9
    assert f.decisions == {
        "accept": 5,
        "improve": 1,
        "reject": 1,
        "escalate": 1,
        "undetermined": 1,
    }
    assert f.labels == {"GO": 5, "NO-GO": 3, "UNDETERMINED": 1}
    assert f.overridden == 2
    assert f.false_positives == Rate(1, 3)
    assert f.false_negatives == Rate(1, 5)
    assert f.go == Rate(5, 9)
    assert f.undetermined == Rate(1, 9)
    assert f.availability == Rate(10, 13)
    assert f.latency_median_s == 3.5
    assert f.latency_p95_s == 45.0
    assert f.agreement == Rate(1, 3)
    assert f.tokens == 9500
    assert f.cost is None
    assert f.unpriced_tokens == 9500


async def test_repository_figures_are_exact(storage: Storage) -> None:
    report = await seeded_report(storage)
    api, docs = (scope.figures for scope in report.repositories)
    assert (api.scope, docs.scope) == ("octo/api", "octo/docs")
    assert (api.judgments, docs.judgments) == (3, 6)
    assert (api.false_positives, docs.false_positives) == (Rate(0, 1), Rate(1, 2))
    assert (api.false_negatives, docs.false_negatives) == (Rate(0, 2), Rate(1, 3))
    assert (api.go, docs.go) == (Rate(2, 3), Rate(3, 6))
    assert (api.undetermined, docs.undetermined) == (Rate(0, 3), Rate(1, 6))
    assert (api.availability, docs.availability) == (Rate(3, 4), Rate(7, 9))
    assert (api.latency_median_s, docs.latency_median_s) == (6.5, 3.25)
    assert (api.latency_p95_s, docs.latency_p95_s) == (10.0, 45.0)
    assert (api.agreement, docs.agreement) == (Rate(0, 1), Rate(1, 2))
    assert (api.tokens, docs.tokens) == (3100, 6400)
    assert report.human_decisions == 4


async def test_per_model_figures_show_which_tier_errs(storage: Storage) -> None:
    report = await seeded_report(storage)
    quick, deep = report.models
    assert quick == GroupFigures(
        name="opencode/gpt-5-nano",
        rounds=9,
        failed=Rate(1, 9),
        verdicts={"accept": 4, "improve": 3, "reject": 1, "escalate": 0},
        decided=5,
        go=Rate(4, 5),
        false_positives=Rate(1, 4),
        false_negatives=Rate(1, 4),
        availability=Rate(7, 10),
        latency_median_s=1.75,
        latency_p95_s=45.0,
        tokens=4500,
        cost=None,
    )
    assert deep == GroupFigures(
        name="opencode/kimi-k2.5-free",
        rounds=3,
        failed=Rate(0, 3),
        verdicts={"accept": 1, "improve": 1, "reject": 1, "escalate": 0},
        decided=3,
        go=Rate(1, 3),
        false_positives=Rate(0, 2),
        false_negatives=Rate(0, 1),
        availability=Rate(3, 3),
        latency_median_s=4.8,
        latency_p95_s=9.0,
        tokens=5000,
        cost=None,
    )
    families = {g.name: g for g in report.families}
    assert families["openai"] == GroupFigures(**{**vars(quick), "name": "openai"})
    assert families["kimi"] == GroupFigures(**{**vars(deep), "name": "kimi"})


async def test_prices_turn_tokens_into_cost(storage: Storage) -> None:
    report = await seeded_report(
        storage, calibration_price_per_1k_tokens={"opencode/gpt-5-nano": 0.5}
    )
    assert report.overall.figures.cost == pytest.approx(2.25)
    assert report.overall.figures.unpriced_tokens == 5000
    assert report.models[0].cost == pytest.approx(2.25)
    assert report.models[1].cost is None


async def test_the_seeded_log_is_not_ready_and_says_why(storage: Storage) -> None:
    readiness = (await seeded_report(storage)).overall.readiness
    assert not readiness.ready
    assert [(r.kpi, r.gap) for r in readiness.reasons] == [
        ("sample", 41),
        ("false_positive_rate", pytest.approx(1 / 3 - 0.10)),
        ("false_negative_rate", pytest.approx(0.20 - 0.05)),
        ("go_rate", pytest.approx(0.70 - 5 / 9)),
        ("availability", pytest.approx(0.95 - 10 / 13)),
    ]


async def test_relaxed_thresholds_make_it_ready(storage: Storage) -> None:
    report = await seeded_report(
        storage,
        calibration_min_sample=9,
        calibration_max_false_positive_rate=0.34,
        calibration_max_false_negative_rate=0.21,
        calibration_min_go_rate=0.55,
        calibration_min_availability=0.74,
    )
    assert report.overall.readiness.ready
    api, docs = report.repositories
    # nobody decided anything in octo/api: not ready whatever its rates
    assert [r.kpi for r in api.readiness.reasons] == ["days_covered", "sample", "human_decisions"]
    assert [r.kpi for r in docs.readiness.reasons] == [
        "sample",
        "false_positive_rate",
        "false_negative_rate",
        "go_rate",
        "undetermined_rate",
    ]


async def test_one_repository_and_a_short_window(storage: Storage) -> None:
    report = await seeded_report(storage, days=3, repository="Octo/API")
    assert report.overall.figures.judgments == 3
    assert [s.figures.scope for s in report.repositories] == ["octo/api"]
    assert report.overall.readiness.reasons[0].kpi == "window_days"


def test_unreadable_records_are_counted_not_fatal() -> None:
    stored = stored_of(SEEDED)
    broken = [*stored, replace(stored[0], record={"go_no_go": "GO"})]
    facts, unreadable = facts_of(broken)
    assert unreadable == 1
    report = calibrate(facts, CalibrationThresholds(), now=NOW, days=30, unreadable=unreadable)
    assert report.unreadable == 1
    assert report.overall.figures.judgments == 10


def test_an_empty_log_holds_blocking_back_on_every_measure() -> None:
    report = calibrate([], CalibrationThresholds(), now=NOW, days=14)
    assert report.repositories == [] and report.models == [] and report.families == []
    assert [r.kpi for r in report.overall.readiness.reasons] == [
        "days_covered",
        "sample",
        "human_decisions",
        "go_rate",
        "availability",
        "median_latency",
    ]
