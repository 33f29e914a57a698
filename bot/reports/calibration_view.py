"""The calibration report as a terminal table or as JSON for scripts. Pure.

The text opens with the one verdict that matters (ready for blocking mode, or what
holds it back), then the figures per scope, per model and per family. The JSON has
`ready` and `reasons` at the top, the same for each repository, and every rate as
value, count and total so a script never divides by zero itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from bot.gfm import plural
from bot.reports.kpis import Calibration, Figures, ScopeReport
from bot.reports.measures import Rate
from bot.reports.model_kpis import GroupFigures
from bot.reports.readiness import Readiness, Reason
from bot.reports.table import Column, fit_line, render_rows
from bot.reports.thresholds import CalibrationThresholds
from bot.reports.triage_view import window_json, window_line

SCOPE_COLUMNS = (
    Column("scope", flex=True),
    Column("judgments", right=True),
    Column("FP", right=True),
    Column("FN", right=True),
    Column("GO", right=True),
    Column("UNDET", right=True),
    Column("avail", right=True),
    Column("p50 s", right=True),
    Column("p95 s", right=True),
    Column("agree", right=True),
    Column("tokens", right=True),
    Column("cost", right=True),
    Column("ready"),
)
MODEL_COLUMNS = (
    Column("FP", right=True),
    Column("FN", right=True),
    Column("avail", right=True),
    Column("p50 s", right=True),
    Column("p95 s", right=True),
    Column("tokens", right=True),
    Column("cost", right=True),
)
"""The columns a model's row ends with, here and in `judge-bot eval` (`model_cells`)."""
GROUP_COLUMNS = (
    Column("name", flex=True),
    Column("rounds", right=True),
    Column("failed", right=True),
    Column("acc/imp/rej/esc", right=True),
    Column("decided", right=True),
    Column("GO", right=True),
    *MODEL_COLUMNS,
)


class RoundErrors(Protocol):
    """What a model's answered rounds got wrong (`GroupFigures`, an evaluation's `Agreement`)."""

    @property
    def false_positives(self) -> Rate: ...
    @property
    def false_negatives(self) -> Rate: ...


class CallFigures(Protocol):
    """What a model's calls cost and how they went (`GroupFigures`, an evaluation's `CallUsage`)."""

    @property
    def availability(self) -> Rate: ...
    @property
    def latency_median_s(self) -> float | None: ...
    @property
    def latency_p95_s(self) -> float | None: ...
    @property
    def tokens(self) -> int: ...
    @property
    def cost(self) -> float | None: ...


def percent(rate: Rate) -> str:
    value = rate.value
    return "-" if value is None else f"{value * 100:.1f}%"


def with_counts(rate: Rate) -> str:
    return "-" if rate.value is None else f"{percent(rate)} {rate.count}/{rate.total}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def money(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def model_cells(rounds: RoundErrors, calls: CallFigures) -> list[str]:
    """A model's `MODEL_COLUMNS`: its rounds' false positives and negatives, its calls'
    availability, latency, tokens and cost."""
    return [
        with_counts(rounds.false_positives),
        with_counts(rounds.false_negatives),
        percent(calls.availability),
        seconds(calls.latency_median_s),
        seconds(calls.latency_p95_s),
        str(calls.tokens),
        money(calls.cost),
    ]


def render_calibration(report: Calibration, width: int | None) -> str:
    lines = [window_line("calibrate", report.window, report.repository), ""]
    lines.extend(_verdict_lines("overall", report.overall.readiness, width))
    lines.append("")
    scopes = [report.overall, *report.repositories]
    lines.extend(render_rows(SCOPE_COLUMNS, [_scope_row(s) for s in scopes], width))
    for scope in report.repositories:
        if not scope.readiness.ready:
            lines.append("")
            lines.extend(_verdict_lines(scope.figures.scope, scope.readiness, width))
    for title, groups in (("per model", report.models), ("per family", report.families)):
        lines.extend(["", f"{title}:"])
        lines.extend(_group_lines(groups, width))
    lines.extend(["", *_notes(report)])
    return "\n".join(lines)


def _verdict_lines(scope: str, readiness: Readiness, width: int | None) -> list[str]:
    if readiness.ready:
        return [f"{scope}: READY for blocking mode"]
    held = plural(len(readiness.reasons), "KPI")
    lines = [f"{scope}: NOT READY for blocking mode ({held} short)"]
    inner = None if width is None else max(width - 4, 20)
    lines.extend("  - " + fit_line(reason.message, inner) for reason in readiness.reasons)
    return lines


def _scope_row(scope: ScopeReport) -> list[str]:
    f = scope.figures
    return [
        f.scope,
        str(f.judgments),
        with_counts(f.false_positives),
        with_counts(f.false_negatives),
        percent(f.go),
        percent(f.undetermined),
        percent(f.availability),
        seconds(f.latency_median_s),
        seconds(f.latency_p95_s),
        percent(f.agreement),
        str(f.tokens),
        money(f.cost),
        "yes" if scope.readiness.ready else "no",
    ]


def _group_lines(groups: Sequence[GroupFigures], width: int | None) -> list[str]:
    if not groups:
        return ["  no model ran in the window"]
    rows = [
        [
            g.name,
            str(g.rounds),
            percent(g.failed),
            "/".join(str(n) for n in g.verdicts.values()),
            str(g.decided),
            percent(g.go),
            *model_cells(g, g),
        ]
        for g in groups
    ]
    return render_rows(GROUP_COLUMNS, rows, width)


def _notes(report: Calibration) -> list[str]:
    notes = [
        f"{plural(report.human_decisions, 'human decision')} (overrides and cancels) "
        "in the window; FP/FN count overrides only.",
    ]
    if report.overall.figures.unpriced_tokens and report.overall.figures.tokens:
        notes.append(
            f"{report.overall.figures.unpriced_tokens} tokens have no price "
            "(JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS); cost counts the priced ones."
        )
    if report.unreadable:
        notes.append(f"left out: {plural(report.unreadable, 'record')} that could not be read")
    return notes


# -- JSON -------------------------------------------------------------------------------


def rate_json(rate: Rate) -> dict[str, Any]:
    return {"value": rate.value, "count": rate.count, "total": rate.total}


def reason_json(reason: Reason) -> dict[str, Any]:
    return {
        "kpi": reason.kpi,
        "value": reason.value,
        "limit": reason.limit,
        "gap": reason.gap,
        "message": reason.message,
    }


def figures_json(f: Figures) -> dict[str, Any]:
    return {
        "scope": f.scope,
        "judgments": f.judgments,
        "verdicts": f.decisions,
        "go_no_go": f.labels,
        "overridden": f.overridden,
        "false_positive_rate": rate_json(f.false_positives),
        "false_negative_rate": rate_json(f.false_negatives),
        "go_rate": rate_json(f.go),
        "undetermined_rate": rate_json(f.undetermined),
        "availability": rate_json(f.availability),
        "latency_median_seconds": f.latency_median_s,
        "latency_p95_seconds": f.latency_p95_s,
        "tier_agreement": rate_json(f.agreement),
        "tokens": f.tokens,
        "unpriced_tokens": f.unpriced_tokens,
        "cost": f.cost,
        "first_judgment": None if f.first_at is None else f.first_at.isoformat(),
    }


def scope_json(scope: ScopeReport) -> dict[str, Any]:
    return {
        **figures_json(scope.figures),
        "ready": scope.readiness.ready,
        "reasons": [reason_json(r) for r in scope.readiness.reasons],
    }


def group_json(g: GroupFigures) -> dict[str, Any]:
    return {
        "name": g.name,
        "rounds": g.rounds,
        "failed_rate": rate_json(g.failed),
        "verdicts": g.verdicts,
        "decided": g.decided,
        "go_rate": rate_json(g.go),
        "false_positive_rate": rate_json(g.false_positives),
        "false_negative_rate": rate_json(g.false_negatives),
        "availability": rate_json(g.availability),
        "latency_median_seconds": g.latency_median_s,
        "latency_p95_seconds": g.latency_p95_s,
        "tokens": g.tokens,
        "cost": g.cost,
    }


def calibration_json(report: Calibration, thresholds: CalibrationThresholds) -> str:
    overall = report.overall
    document = {
        "ready": overall.readiness.ready,
        "reasons": [reason_json(r) for r in overall.readiness.reasons],
        "window": window_json(report.window),
        "repository": report.repository,
        "thresholds": thresholds.model_dump(mode="json"),
        "overall": scope_json(overall),
        "repositories": [scope_json(s) for s in report.repositories],
        "models": [group_json(g) for g in report.models],
        "families": [group_json(g) for g in report.families],
        "human_decisions": report.human_decisions,
        "unreadable_records": report.unreadable,
    }
    return json.dumps(document, indent=2)
