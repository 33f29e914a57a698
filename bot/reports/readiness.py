"""Ready for blocking mode, or which KPI holds it back and by how much. Pure.

Every check of seed 000 must pass over the window: enough days of data, enough
judgments, at least one of them decided by a person, then each rate against its limit.
A rate with nothing to count (no not-accepted judgment for the false-positive rate, no
accepted one for the false-negative rate) cannot be wrong and passes; availability and
latency without a single model call cannot be measured and hold blocking back.

Why a human decision is required: the false-positive and false-negative rates count
the judgments a person overrode, over all judgments. With no person's decision in the
sample both read 0 % whatever the judges did, and "ready" would rest on nobody having
looked. One standing decision (`/judge override accept|reject`, which may agree with the
judges) is the least that shows someone did.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bot.reports.facts import ReportWindow
from bot.reports.thresholds import CalibrationThresholds

if TYPE_CHECKING:
    from bot.reports.kpis import Figures

ONE_DAY = timedelta(days=1)


@dataclass(frozen=True)
class Reason:
    """One KPI that holds blocking mode back. `gap` is how far the value is from passing,
    in the KPI's unit (a fraction for rates, seconds, days, judgments); None when the
    value could not be measured."""

    kpi: str
    value: float | None
    limit: str
    gap: float | None
    message: str


@dataclass(frozen=True)
class Readiness:
    reasons: tuple[Reason, ...]

    @property
    def ready(self) -> bool:
        return not self.reasons


def days_covered(first_at: datetime | None, window: ReportWindow) -> int:
    """Days of the window with data from its first judgment on, the current day counted."""
    if first_at is None:
        return 0
    return min((window.until - first_at) // ONE_DAY + 1, window.days)


def pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def readiness(figures: Figures, limits: CalibrationThresholds, window: ReportWindow) -> Readiness:
    checks = (
        _window(window, limits),
        _coverage(figures, window, limits),
        _sample(figures, limits),
        _human(figures),
        _at_most("false_positive_rate", "false-positive rate", figures.false_positives.value,
                 limits.calibration_max_false_positive_rate),
        _at_most("false_negative_rate", "false-negative rate", figures.false_negatives.value,
                 limits.calibration_max_false_negative_rate),
        _go_rate(figures, limits),
        _at_most("undetermined_rate", "UNDETERMINED rate", figures.undetermined.value,
                 limits.calibration_max_undetermined_rate),
        _availability(figures, limits),
        _latency(figures, limits),
    )  # fmt: skip
    return Readiness(tuple(reason for reason in checks if reason is not None))


def _at_least(kpi: str, count: int, needed: int, unit: str, message: str) -> Reason | None:
    """A count (days, judgments) that must reach `needed`; `message` says why it holds
    blocking back when it does not."""
    if count >= needed:
        return None
    return Reason(kpi, count, f">= {needed} {unit}", needed - count, message)


def _window(window: ReportWindow, limits: CalibrationThresholds) -> Reason | None:
    needed = limits.calibration_min_days
    return _at_least(
        "window_days",
        window.days,
        needed,
        "days",
        f"the window is {window.days} days; calibration needs {needed} (--days {needed})",
    )


def _coverage(
    figures: Figures, window: ReportWindow, limits: CalibrationThresholds
) -> Reason | None:
    needed = min(limits.calibration_min_days, window.days)
    covered = days_covered(figures.first_at, window)
    return _at_least(
        "days_covered",
        covered,
        needed,
        "days",
        f"judgments cover {covered} of the {needed} days needed ({needed - covered} short)",
    )


def _sample(figures: Figures, limits: CalibrationThresholds) -> Reason | None:
    needed = limits.calibration_min_sample
    return _at_least(
        "sample",
        figures.judgments,
        needed,
        "judgments",
        f"{figures.judgments} judgments; at least {needed} needed "
        f"({needed - figures.judgments} short)",
    )


MIN_HUMAN_DECISIONS = 1


def _human(figures: Figures) -> Reason | None:
    """At least one judgment a person decided (module docstring)."""
    return _at_least(
        "human_decisions",
        figures.overridden,
        MIN_HUMAN_DECISIONS,
        "judgment decided by a person",
        "no judgment was decided by a person (/judge override): FP and FN cannot be "
        "measured without one",
    )


def _at_most(kpi: str, name: str, value: float | None, limit: float) -> Reason | None:
    """Seed 000's limits are strict: a rate must stay below its limit."""
    if value is None or value < limit:
        return None
    gap = value - limit
    return Reason(
        kpi,
        value,
        f"< {pct(limit)}",
        gap,
        f"{name} {pct(value)} is not below {pct(limit)} (over by {gap * 100:.1f} points)",
    )


def _go_rate(figures: Figures, limits: CalibrationThresholds) -> Reason | None:
    low, high = limits.calibration_min_go_rate, limits.calibration_max_go_rate
    value = figures.go.value
    span = f"{pct(low)}-{pct(high)}"
    if value is None:
        return Reason("go_rate", None, span, None, "no judgment: the GO rate is unknown")
    if low <= value <= high:
        return None
    side, gap = ("under", low - value) if value < low else ("over", value - high)
    return Reason(
        "go_rate",
        value,
        span,
        gap,
        f"GO rate {pct(value)} is outside {span} ({side} by {gap * 100:.1f} points)",
    )


def _availability(figures: Figures, limits: CalibrationThresholds) -> Reason | None:
    limit = limits.calibration_min_availability
    value = figures.availability.value
    if value is None:
        return Reason(
            "availability", None, f"> {pct(limit)}", None,
            "no model call in the window: provider availability is unknown",
        )  # fmt: skip
    if value > limit:
        return None
    gap = limit - value
    return Reason(
        "availability",
        value,
        f"> {pct(limit)}",
        gap,
        f"provider availability {pct(value)} is not above {pct(limit)} "
        f"(under by {gap * 100:.1f} points)",
    )


def _latency(figures: Figures, limits: CalibrationThresholds) -> Reason | None:
    limit = limits.calibration_max_median_latency_seconds
    value = figures.latency_median_s
    if value is None:
        return Reason(
            "median_latency", None, f"< {limit:g} s", None,
            "no model call in the window: the judgment latency is unknown",
        )  # fmt: skip
    if value < limit:
        return None
    gap = value - limit
    return Reason(
        "median_latency",
        value,
        f"< {limit:g} s",
        gap,
        f"median judgment latency {value:.1f} s is not below {limit:g} s (over by {gap:.1f} s)",
    )
