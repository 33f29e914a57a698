"""The report's text and JSON, and its figures against the blocking-mode limits."""

from __future__ import annotations

import json
import re

import pytest

from bot.evaluation.metrics import Failed, JudgedExample, RoundOutcome, evaluate
from bot.evaluation.view import Check, checks, evaluation_json, render_evaluation
from bot.judge.records import Verdict
from bot.reports.facts import CallFact
from bot.reports.thresholds import CalibrationThresholds

LIMITS = CalibrationThresholds(_env_file=None)


def row(text: str, figure: str) -> list[str]:
    """A table row's cells (cells are two or more spaces apart)."""
    (line,) = [line for line in text.splitlines() if line.startswith(figure)]
    return re.split(r"\s{2,}", line.strip())


def test_a_check_is_ok_below_its_limit_and_unknown_without_a_value() -> None:
    assert Check("x", 0.05, 0.1).ok is True
    assert Check("x", 0.1, 0.1).ok is False  # the limit itself is over: "below" it
    assert Check("x", None, 0.1).ok is None


def test_an_empty_evaluation_renders_without_its_tables() -> None:
    report = evaluate([], {})
    text = render_evaluation(report, LIMITS, "set.jsonl", None)
    assert text.splitlines()[:2] == [
        "judge-bot eval: 0 changes from set.jsonl (labelled none)",
        "decisions: none",
    ]
    assert "Tiers against" not in text and "Per tier" not in text and "Scores" not in text
    assert row(text, "false positives") == ["false positives", "-", "< 10%", "-"]
    assert [c.ok for c in checks(report, LIMITS)] == [None, None, None, None]


def judged(expected: Verdict, decision: Verdict, ms: float) -> JudgedExample:
    return JudgedExample(
        name="x",
        expected=expected,
        decision=decision,
        label="GO" if decision is Verdict.ACCEPT else "NO-GO",
        rounds=(RoundOutcome("quick", "m", decision, {"semantic": 4}),),
        calls=(CallFact("quick", "m", ms, 10, 1, True),),
        expected_scores={"semantic": 5},
    )


def test_figures_against_their_limits() -> None:
    items = [judged(Verdict.ACCEPT, Verdict.ACCEPT, 40_000)] * 19
    items += [judged(Verdict.ACCEPT, Verdict.REJECT, 1_000)]
    report = evaluate(items, {})
    by_kpi = {c.name: c for c in checks(report, LIMITS)}
    assert by_kpi["false_positive_rate"].value == pytest.approx(1.0)
    assert by_kpi["false_positive_rate"].ok is False
    assert by_kpi["false_negative_rate"].ok is True
    assert by_kpi["median_latency_seconds"].value == pytest.approx(40.0)
    text = render_evaluation(report, LIMITS, "s", 80)
    assert row(text, "median latency s") == ["median latency s", "40.0", "< 30 s", "over"]
    assert row(text, "GO rate") == ["GO rate", "95.0% 19/20", "labelled accept 100.0%"]
    body = json.loads(evaluation_json(report, LIMITS, "s"))
    assert body["limits"][0] == {
        "kpi": "false_positive_rate",
        "limit": 0.1,
        "ok": False,
        "value": 1.0,
    }
    assert body["seats"][0]["usage"]["availability"] == {"count": 20, "total": 20, "value": 1.0}
    assert body["scores"] == [
        {"compared": 20, "dimension": "semantic", "mean_absolute_error": 1.0,
         "mean_difference": -1.0}
    ]  # fmt: skip


def test_failed_changes_and_undetermined_swaps_are_reported() -> None:
    undetermined = JudgedExample(
        name="x",
        expected=Verdict.ACCEPT,
        decision=Verdict.ACCEPT,
        label="GO",
        swapped=Verdict.UNDETERMINED,
    )
    failed = Failed(name="broken", expected=Verdict.REJECT, error="ValueError: bad file")
    report = evaluate([undetermined, failed], {})
    text = render_evaluation(report, LIMITS, "s", None)
    assert "judge-bot eval: 1 changes from s (labelled accept 1); 1 failed" in text
    assert "failed: broken (ValueError: bad file)" in text
    assert (
        "swap: 0 changes judged again with their files in another order, 0 not (one file, "
        "or --no-swap), 1 undetermined in either order (left out)"
    ) in text
    body = json.loads(evaluation_json(report, LIMITS, "s"))
    assert body["failed"] == [
        {"name": "broken", "expected": "reject", "error": "ValueError: bad file"}
    ]
    assert body["swap_undetermined"] == 1


def test_a_clean_run_names_no_failures() -> None:
    report = evaluate([judged(Verdict.ACCEPT, Verdict.ACCEPT, 10)], {})
    text = render_evaluation(report, LIMITS, "s", None)
    assert "failed:" not in text and "undetermined in either order" not in text
    assert text.splitlines()[0] == "judge-bot eval: 1 changes from s (labelled accept 1)"
    assert json.loads(evaluation_json(report, LIMITS, "s"))["failed"] == []
