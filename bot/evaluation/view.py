"""An evaluation for people (plain-text tables) and for machines (`--json`). Pure.

The figures that calibration holds against the blocking-mode limits (`JUDGE_CALIBRATION_*`:
false positives, false negatives, undetermined, median latency) are shown against the
same limits, marked `ok` or `over`; the GO rate is shown beside the share of the dataset
labelled accept, since on a dataset it follows the dataset's mix, not the team's work.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from bot.evaluation.metrics import Evaluation, SeatFigures
from bot.reports.calibration_view import (
    MODEL_COLUMNS,
    model_cells,
    money,
    percent,
    rate_json,
    seconds,
    with_counts,
)
from bot.reports.measures import Rate
from bot.reports.table import Column, fit_line, render_rows
from bot.reports.thresholds import CalibrationThresholds

SEAT_COLUMNS = (
    Column("tier"),
    Column("model", flex=True),
    Column("rounds", right=True),
    Column("failed", right=True),
    Column("accuracy", right=True),
    *MODEL_COLUMNS,
)
PAIR_COLUMNS = (
    Column("tiers"),
    Column("both answered", right=True),
    Column("agreed", right=True),
    Column("kappa", right=True),
)
SCORE_COLUMNS = (
    Column("dimension"),
    Column("compared", right=True),
    Column("mean abs error", right=True),
    Column("judge - label", right=True),
)


@dataclass(frozen=True)
class Check:
    """A figure against its blocking-mode limit, which it must stay below."""

    name: str
    value: float | None
    limit: float

    @property
    def ok(self) -> bool | None:
        """None when there was nothing to measure (no change the panel did not accept,
        for the false-positive rate); calibration lets such a rate pass."""
        return None if self.value is None else self.value < self.limit


def checks(report: Evaluation, limits: CalibrationThresholds) -> list[Check]:
    agreement = report.agreement
    return [
        Check("false_positive_rate", agreement.false_positives.value,
              limits.calibration_max_false_positive_rate),
        Check("false_negative_rate", agreement.false_negatives.value,
              limits.calibration_max_false_negative_rate),
        Check("undetermined_rate", agreement.undetermined.value,
              limits.calibration_max_undetermined_rate),
        Check("median_latency_seconds", report.per_change.latency_median_s,
              limits.calibration_max_median_latency_seconds),
    ]  # fmt: skip


def _mark(check: Check) -> str:
    return {True: "ok", False: "over", None: "-"}[check.ok]


def _limit(check: Check) -> str:
    if check.name == "median_latency_seconds":
        return f"< {check.limit:g} s"
    return f"< {check.limit * 100:g}%"


def _kpi_lines(report: Evaluation, limits: CalibrationThresholds) -> list[str]:
    a = report.agreement
    kpi = {c.name: c for c in checks(report, limits)}
    labelled = Rate(report.expected.get("accept", 0), report.changes)
    latency = kpi["median_latency_seconds"]
    rows = [
        ["accuracy", with_counts(a.accuracy), "", ""],
        ["false positives", with_counts(a.false_positives), *_cells(kpi["false_positive_rate"])],
        ["false negatives", with_counts(a.false_negatives), *_cells(kpi["false_negative_rate"])],
        ["undetermined", with_counts(a.undetermined), *_cells(kpi["undetermined_rate"])],
        ["GO rate", with_counts(report.go), f"labelled accept {percent(labelled)}", ""],
        ["swap consistency", with_counts(report.swap), "", ""],
        ["median latency s", seconds(latency.value), *_cells(latency)],
    ]  # fmt: skip
    columns = (Column("figure"), Column("value", right=True), Column("limit"), Column(""))
    return render_rows(columns, rows, None)


def _cells(check: Check) -> list[str]:
    return [_limit(check), _mark(check)]


def _seat_row(seat: SeatFigures) -> list[str]:
    return [
        seat.tier,
        seat.model,
        str(seat.rounds),
        str(seat.failed),
        with_counts(seat.agreement.accuracy),
        *model_cells(seat.agreement, seat.usage),
    ]


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _failed_lines(report: Evaluation, width: int | None) -> list[str]:
    """Each change whose judgment raised, with why (scrubbed by the runner)."""
    return [fit_line(f"failed: {f.name} ({f.error})", width) for f in report.failed]


def _swap_line(report: Evaluation, width: int | None) -> str:
    undetermined = report.swap_undetermined
    left_out = f", {undetermined} undetermined in either order (left out)" if undetermined else ""
    return fit_line(f"swap: {report.swap.total} changes judged again with their files in "
                    f"another order, {report.swap_skipped} not (one file, or --no-swap)"
                    f"{left_out}", width)  # fmt: skip


def render_evaluation(
    report: Evaluation, limits: CalibrationThresholds, source: str, width: int | None
) -> str:
    per = report.per_change
    failed = f"; {len(report.failed)} failed" if report.failed else ""
    lines = [
        fit_line(f"judge-bot eval: {report.changes} changes from {source} "
                 f"(labelled {_counts(report.expected)}){failed}", width),
        *_failed_lines(report, width),
        fit_line(f"decisions: {_counts(report.decisions)}", width),
        "",
        *_kpi_lines(report, limits),
        "",
        _swap_line(report, width),
        fit_line(f"per change: latency p50 {seconds(per.latency_median_s)} s, p95 "
                 f"{seconds(per.latency_p95_s)} s; wall p50 {seconds(per.wall_median_s)} s; "
                 f"calls {_number(per.calls_mean)}; tokens {_number(per.tokens_mean, 0)}; "
                 f"cost {money(per.cost_mean)}", width),
        fit_line(f"this evaluation: {report.calls} model calls ({report.requests} requests), "
                 f"{report.seconds:.1f} s of judging", width),
    ]  # fmt: skip
    if report.tiers:
        lines += ["", "Tiers against each other (Cohen's kappa):"]
        rows = [
            [f"{p.first} / {p.second}", str(p.both_answered), with_counts(p.agreed),
             _number(p.kappa, 2)]
            for p in report.tiers
        ]  # fmt: skip
        lines += render_rows(PAIR_COLUMNS, rows, width)
    if report.seats:
        lines += ["", "Per tier and model (rounds against the labels; latency per call):"]
        lines += render_rows(SEAT_COLUMNS, [_seat_row(s) for s in report.seats], width)
    if report.scores:
        lines += ["", "Scores against the labelled ones (deciding round):"]
        rows = [
            [s.dimension, str(s.compared), f"{s.mean_absolute_error:.2f}",
             f"{s.mean_difference:+.2f}"]
            for s in report.scores
        ]  # fmt: skip
        lines += render_rows(SCORE_COLUMNS, rows, width)
    return "\n".join(lines)


# -- JSON -------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, Rate):
        return rate_json(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields, one level deep (nested dataclasses keep their Rates)."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


def evaluation_json(report: Evaluation, limits: CalibrationThresholds, source: str) -> str:
    body: dict[str, Any] = {
        "source": source,
        **_fields(report),
        "agreement": _fields(report.agreement),
        "tiers": [_fields(p) for p in report.tiers],
        "seats": [
            {**_fields(s), "agreement": _fields(s.agreement), "usage": _fields(s.usage)}
            for s in report.seats
        ],
        "per_change": asdict(report.per_change),
        "failed": [
            {"name": f.name, "expected": f.expected.value, "error": f.error} for f in report.failed
        ],
        "scores": [asdict(s) for s in report.scores],
        "limits": [
            {"kpi": c.name, "value": c.value, "limit": c.limit, "ok": c.ok}
            for c in checks(report, limits)
        ],
    }
    return json.dumps(_jsonable(body), indent=2, sort_keys=True)
