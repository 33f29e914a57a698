"""The KPI gauges on /metrics: seeded storage in, exact gauge values out, on SQLite and
PostgreSQL; bounded labels; a failed refresh keeps the last values; the loop starts and
stops with the app."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from bot.app import METRICS
from bot.judge.records import Tier, Verdict
from bot.metrics import Metrics
from bot.reports import kpi_metrics
from bot.reports.kpi_metrics import KpiGauges, KpiRefresher, shown_scopes
from bot.reports.kpis import calibrate
from bot.reports.thresholds import CalibrationThresholds
from bot.storage.base import Storage
from tests.reports.seeded import NOW, QUICK, SEEDED, call, day, judgment, store_all, stored_of
from tests.support.app_helpers import make_settings, running_app
from tests.support.fact_builders import facts_of

LIMITS = CalibrationThresholds(_env_file=None)


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(f"judge_kpi_{name}", labels)


async def refreshed(storage: Storage) -> tuple[CollectorRegistry, KpiRefresher]:
    registry = CollectorRegistry()
    refresher = KpiRefresher(storage, KpiGauges(registry), LIMITS, lambda: NOW)
    await refresher.refresh()
    return registry, refresher


async def test_seeded_storage_gives_exact_gauges(storage: Storage) -> None:
    """The figures of tests/reports/test_kpis.py, over the 14-day calibration window."""
    await store_all(storage, SEEDED)
    registry, _ = await refreshed(storage)
    overall = {"scope": "overall"}
    assert value(registry, "sample_size", **overall) == 9
    assert value(registry, "false_positive_rate", **overall) == pytest.approx(1 / 3)
    assert value(registry, "false_negative_rate", **overall) == pytest.approx(1 / 5)
    assert value(registry, "go_rate", **overall) == pytest.approx(5 / 9)
    assert value(registry, "undetermined_rate", **overall) == pytest.approx(1 / 9)
    assert value(registry, "availability", **overall) == pytest.approx(10 / 13)
    assert value(registry, "latency_median_seconds", **overall) == 3.5
    assert value(registry, "latency_p95_seconds", **overall) == 45.0
    assert value(registry, "ready", **overall) == 0
    assert value(registry, "sample_size", scope="octo/docs") == 6
    assert value(registry, "go_rate", scope="octo/api") == pytest.approx(2 / 3)
    assert value(registry, "model_rounds", model="opencode/gpt-5-nano") == 9
    assert value(registry, "model_availability", model="opencode/gpt-5-nano") == 0.7
    assert value(registry, "model_failed_rounds_rate", model="opencode/gpt-5-nano") == (
        pytest.approx(1 / 9)
    )
    assert value(registry, "model_latency_median_seconds", model="opencode/kimi-k2.5-free") == 4.8
    assert value(registry, "repositories_omitted") == 0
    assert value(registry, "refreshed_timestamp_seconds") == NOW.timestamp()


async def test_an_empty_window_has_nan_rates_and_leaves_no_old_series(storage: Storage) -> None:
    await store_all(storage, SEEDED)
    registry, refresher = await refreshed(storage)
    assert value(registry, "sample_size", scope="octo/api") == 3
    later = KpiRefresher(storage, refresher._gauges, LIMITS, lambda: NOW + timedelta(days=60))
    await later.refresh()
    assert value(registry, "sample_size", scope="overall") == 0
    assert math.isnan(value(registry, "go_rate", scope="overall") or 0.0)
    assert math.isnan(value(registry, "latency_median_seconds", scope="overall") or 0.0)
    assert value(registry, "sample_size", scope="octo/api") is None
    assert value(registry, "model_rounds", model="opencode/gpt-5-nano") is None


def test_repositories_and_models_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The busiest repositories get a series; the rest are counted in overall only."""
    monkeypatch.setattr(kpi_metrics, "MAX_REPOSITORIES", 2)
    monkeypatch.setattr(kpi_metrics, "MAX_MODELS", 1)
    records = [
        judgment(f"octo/r{n}", n * 10 + k, Verdict.ACCEPT, "GO",
                 [(Tier.QUICK, QUICK, Verdict.ACCEPT)], [call(Tier.QUICK, QUICK, 900, 10)],
                 day(1))
        for n in range(4) for k in range(n + 1)
    ]  # fmt: skip
    facts, _ = facts_of(stored_of(records))
    report = calibrate(facts, LIMITS, now=NOW, days=14)
    scopes, omitted = shown_scopes(report)
    assert [s.figures.scope for s in scopes] == ["overall", "octo/r3", "octo/r2"]
    assert omitted == 2
    registry = CollectorRegistry()
    KpiGauges(registry).update(report, NOW)
    assert value(registry, "sample_size", scope="overall") == 10
    assert value(registry, "sample_size", scope="octo/r1") is None
    assert value(registry, "repositories_omitted") == 2
    assert value(registry, "model_rounds", model="opencode/gpt-5-nano") == 10
    ready = replace(report.overall, readiness=replace(report.overall.readiness, reasons=()))
    KpiGauges(registry2 := CollectorRegistry()).update(replace(report, overall=ready), NOW)
    assert value(registry2, "ready", scope="overall") == 1


async def test_a_failed_refresh_keeps_the_last_values(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    await store_all(storage, SEEDED)
    registry, refresher = await refreshed(storage)
    await storage.close()
    stop = asyncio.Event()
    task = asyncio.create_task(refresher.run(stop, 0.01))
    while "refresh failed" not in caplog.text:
        await asyncio.sleep(0.01)
    stop.set()
    await task
    assert value(registry, "sample_size", scope="overall") == 9


async def test_the_app_refreshes_the_gauges_and_serves_them(
    tmp_path: Path, github_keypair: Any
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path, JUDGE_KPI_REFRESH_SECONDS=3600)
    async with running_app(settings, start_workers=False) as (client, app):
        registry = app[METRICS].registry
        while not value(registry, "refreshed_timestamp_seconds"):
            await asyncio.sleep(0.01)
        text = await (await client.get("/metrics")).text()
    assert 'judge_kpi_sample_size{scope="overall"} 0.0' in text
    assert 'judge_kpi_ready{scope="overall"} 0.0' in text


async def test_zero_turns_the_gauges_off(tmp_path: Path, github_keypair: Any) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path, JUDGE_KPI_REFRESH_SECONDS=0)
    async with running_app(settings, start_workers=False) as (client, _):
        text = await (await client.get("/metrics")).text()
    assert "judge_kpi_" not in text


def test_the_gauges_live_on_the_apps_own_registry() -> None:
    """Two apps (tests) each register their own gauges without a clash."""
    KpiGauges(Metrics().registry)
    KpiGauges(Metrics().registry)
