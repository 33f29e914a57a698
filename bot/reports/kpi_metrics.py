"""The calibration KPIs as Prometheus gauges on `/metrics`, refreshed in the background.

Every `JUDGE_KPI_REFRESH_SECONDS` (default 300; 0: off) the calibration window
(`JUDGE_CALIBRATION_MIN_DAYS`, the days readiness needs) is read through the reports'
lean read and counted by `bot.reports.kpis.calibrate`, the numbers `judge-bot calibrate`
prints, and the gauges take the new values. Labels stay bounded: `scope` is `overall`
or one of the `MAX_REPOSITORIES` repositories with the most judgments (the others count
in `overall` only, and `judge_kpi_repositories_omitted` says how many), `model` one of
the `MAX_MODELS` models with the most rounds. A series whose scope or model left the
window is removed, not left at its last value. A rate with nothing to divide is NaN.

A refresh that fails (storage down) is logged and tried again at the next interval;
the gauges keep their values, and `judge_kpi_refreshed_timestamp_seconds` says how old
they are.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta

from aiohttp import web
from prometheus_client import CollectorRegistry, Gauge

from bot.lifetime import CleanupContext, Clock, every, running
from bot.reports import sources
from bot.reports.facts import RecordFact
from bot.reports.kpis import Calibration, ScopeReport, calibrate
from bot.reports.measures import Rate
from bot.reports.model_kpis import GroupFigures
from bot.reports.sources import collector_paused
from bot.reports.thresholds import CalibrationThresholds
from bot.storage.base import Storage

log = logging.getLogger(__name__)

MAX_REPOSITORIES = 20
MAX_MODELS = 10

_SCOPE_GAUGES = (
    ("false_positive_rate", "Non-accepts a person overrode to accept, over non-accepts."),
    ("false_negative_rate", "Accepts a person overrode to reject, over accepts."),
    ("go_rate", "Judgments labelled GO, over judgments."),
    ("undetermined_rate", "Judgments labelled UNDETERMINED, over judgments."),
    ("availability", "Successful model calls over requests made (retries counted)."),
    ("latency_median_seconds", "Median judgment latency (its model calls summed)."),
    ("latency_p95_seconds", "95th-percentile judgment latency."),
    ("ready", "1 when every KPI is within its JUDGE_CALIBRATION_* limit, else 0."),
    ("sample_size", "Judgments in the calibration window."),
)
_MODEL_GAUGES = (
    ("model_availability", "A model's successful calls over requests made."),
    ("model_failed_rounds_rate", "A model's rounds without a usable answer, over its rounds."),
    ("model_latency_median_seconds", "Median latency of a model's calls."),
    ("model_rounds", "Rounds a model ran in the calibration window."),
)


def _rate(rate: Rate) -> float:
    value = rate.value
    return math.nan if value is None else value


def _seconds(value: float | None) -> float:
    return math.nan if value is None else value


def scope_values(scope: ScopeReport) -> dict[str, float]:
    """One scope's gauge values, by gauge suffix."""
    f = scope.figures
    return {
        "false_positive_rate": _rate(f.false_positives),
        "false_negative_rate": _rate(f.false_negatives),
        "go_rate": _rate(f.go),
        "undetermined_rate": _rate(f.undetermined),
        "availability": _rate(f.availability),
        "latency_median_seconds": _seconds(f.latency_median_s),
        "latency_p95_seconds": _seconds(f.latency_p95_s),
        "ready": 1.0 if scope.readiness.ready else 0.0,
        "sample_size": float(f.judgments),
    }


def model_values(group: GroupFigures) -> dict[str, float]:
    return {
        "model_availability": _rate(group.availability),
        "model_failed_rounds_rate": _rate(group.failed),
        "model_latency_median_seconds": _seconds(group.latency_median_s),
        "model_rounds": float(group.rounds),
    }


def shown_scopes(report: Calibration) -> tuple[list[ScopeReport], int]:
    """`overall` and the busiest repositories (most judgments, then by name), and how many
    repositories are left out."""
    busiest = sorted(report.repositories, key=lambda s: (-s.figures.judgments, s.figures.scope))
    return [report.overall, *busiest[:MAX_REPOSITORIES]], max(len(busiest) - MAX_REPOSITORIES, 0)


def shown_models(report: Calibration) -> list[GroupFigures]:
    return sorted(report.models, key=lambda m: (-m.rounds, m.name))[:MAX_MODELS]


class KpiGauges:
    """The `judge_kpi_*` gauges on one registry, set from one calibration at a time."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._scope = {
            name: Gauge(f"judge_kpi_{name}", text, ["scope"], registry=registry)
            for name, text in _SCOPE_GAUGES
        }
        self._model = {
            name: Gauge(f"judge_kpi_{name}", text, ["model"], registry=registry)
            for name, text in _MODEL_GAUGES
        }
        self._omitted = Gauge(
            "judge_kpi_repositories_omitted",
            f"Repositories beyond the {MAX_REPOSITORIES} busiest: counted in overall only.",
            registry=registry,
        )
        self._refreshed = Gauge(
            "judge_kpi_refreshed_timestamp_seconds",
            "When the KPI gauges were last computed (Unix time).",
            registry=registry,
        )
        self._scopes: set[str] = set()
        self._models: set[str] = set()

    def update(self, report: Calibration, at: datetime) -> None:
        scopes, omitted = shown_scopes(report)
        values = {s.figures.scope: scope_values(s) for s in scopes}
        self._scopes = _replace(self._scope, values, self._scopes)
        models = {m.name: model_values(m) for m in shown_models(report)}
        self._models = _replace(self._model, models, self._models)
        self._omitted.set(omitted)
        self._refreshed.set(at.timestamp())


def _replace(
    gauges: dict[str, Gauge], values: dict[str, dict[str, float]], before: set[str]
) -> set[str]:
    """Set every label's values and remove the labels no longer shown."""
    for label, by_gauge in values.items():
        for name, value in by_gauge.items():
            gauges[name].labels(label).set(value)
    for gone in before - values.keys():
        for gauge in gauges.values():
            gauge.remove(gone)
    return set(values)


class KpiRefresher:
    """Computes the calibration window's KPIs and hands them to the gauges."""

    def __init__(
        self,
        storage: Storage,
        gauges: KpiGauges,
        thresholds: CalibrationThresholds,
        clock: Clock,
    ) -> None:
        self._storage = storage
        self._gauges = gauges
        self._thresholds = thresholds
        self._clock = clock

    async def refresh(self) -> Calibration:
        now = self._clock()
        days = self._thresholds.calibration_min_days
        facts, unreadable = await sources.window_facts(self._storage, now - timedelta(days=days))
        # Counting a large window is pure Python for a while: off the event loop.
        report = await asyncio.to_thread(self._count, facts, unreadable, now, days)
        self._gauges.update(report, now)
        return report

    def _count(
        self, facts: Sequence[RecordFact], unreadable: int, now: datetime, days: int
    ) -> Calibration:
        with collector_paused():
            return calibrate(facts, self._thresholds, now=now, days=days, unreadable=unreadable)

    async def run(self, stop: asyncio.Event, interval: float) -> None:
        """Refresh now and every `interval` seconds until `stop` is set."""

        async def refresh_once() -> None:
            try:
                await self.refresh()
            except Exception:  # storage down, a bad row: the gauges keep their last values
                log.warning("KPI gauges: refresh failed; trying again later", exc_info=True)

        await every(interval, stop, refresh_once)


def kpi_metrics_ctx(refresher: KpiRefresher, interval: float) -> CleanupContext:
    """An aiohttp cleanup context refreshing the gauges for the app's life."""

    async def kpi_metrics(app: web.Application) -> AsyncIterator[None]:
        async with running(lambda stop: refresher.run(stop, interval)):
            yield

    return kpi_metrics
