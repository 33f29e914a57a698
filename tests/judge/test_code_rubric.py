"""The code rubric (`bot/judge/rubrics/code.py`): weighted dimensions, major issues and low
confidence, checked over a grid straddling both thresholds and at each named boundary."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bot.judge.records import Verdict
from bot.judge.rubrics.code import CodeRubric, CodeThresholds
from bot.judge.rubrics.parsing import ParseError


def code_obj(
    c: float, s: float, q: float, m: float, *, issues: list[Any] | None = None, **kw: Any
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "dimensions": {
            "correctness": c,
            "scope_adherence": s,
            "code_quality": q,
            "completeness": m,
        },
        "issues": issues or [],
    }
    obj.update(kw)
    return obj


def code_oracle(values: tuple[float, ...], major: bool, low: bool) -> str:
    if low:
        return "escalate"
    # tenths as integers so the oracle has no float comparisons of its own
    tenths = [round(v * 10) for v in values]
    if min(tenths) < 4 or (major and tenths[0] < 7):
        return "reject"
    if min(tenths) >= 7 and not major:
        return "accept"
    return "improve"


GRID = [0.0, 0.3, 0.4, 0.6, 0.7, 1.0]


@pytest.mark.parametrize("major", [False, True])
@pytest.mark.parametrize("confidence", ["high", "low"])
def test_code_verdict_grid_matches_oracle(major: bool, confidence: str) -> None:
    """Every combination over a grid straddling both thresholds."""
    rubric = CodeRubric()
    issues = [{"severity": "major", "description": "bad"}] if major else []
    for values in itertools.product(GRID, repeat=4):
        answer = rubric.parse(code_obj(*values, issues=issues, confidence=confidence))
        expected = code_oracle(values, major, confidence == "low")
        assert rubric.decide(answer).value == expected, values


@pytest.mark.parametrize(
    ("values", "issues", "expected"),
    [
        ((0.7, 0.7, 0.7, 0.7), [], Verdict.ACCEPT),  # pass boundary inclusive
        ((0.69, 0.9, 0.9, 0.9), [], Verdict.IMPROVE),
        ((0.9, 0.9, 0.9, 0.4), [], Verdict.IMPROVE),  # reject boundary exclusive
        ((0.9, 0.9, 0.9, 0.39), [], Verdict.REJECT),
        ((0.9, 0.9, 0.9, 0.9), [{"severity": "major", "description": "x"}], Verdict.IMPROVE),
        ((0.6, 0.9, 0.9, 0.9), [{"severity": "major", "description": "x"}], Verdict.REJECT),
        ((0.9, 0.9, 0.9, 0.9), [{"severity": "minor", "description": "x"}], Verdict.ACCEPT),
        ((0.6, 0.9, 0.9, 0.9), [{"severity": "minor", "description": "x"}], Verdict.IMPROVE),
    ],
)
def test_code_named_boundaries(
    values: tuple[float, float, float, float], issues: list[Any], expected: Verdict
) -> None:
    rubric = CodeRubric()
    assert rubric.decide(rubric.parse(code_obj(*values, issues=issues))) is expected


def test_code_weighted_average_and_reported_score() -> None:
    """Weights .4/.2/.2/.2; a reported composite that disagrees is replaced and recorded."""
    rubric = CodeRubric()
    answer = rubric.parse(code_obj(1.0, 0.5, 0.5, 0.0, score=0.9))
    assert answer.average == pytest.approx(0.6)
    assert answer.extra["reported_average"] == 0.9
    assert answer.extra["average_recomputed"] is True
    consistent = rubric.parse(code_obj(1.0, 0.5, 0.5, 0.0, score="0.6"))
    assert "reported_average" not in consistent.extra


def test_code_low_confidence_escalation_can_be_disabled() -> None:
    rubric = CodeRubric(CodeThresholds(low_confidence_escalates=False))
    answer = rubric.parse(code_obj(0.9, 0.9, 0.9, 0.9, confidence="low"))
    assert rubric.decide(answer) is Verdict.ACCEPT


def test_code_parse_details() -> None:
    """Seed 002 shape: summary, issues as improvements, labels, confidence."""
    rubric = CodeRubric()
    answer = rubric.parse(
        code_obj(
            0.8,
            0.8,
            0.8,
            0.8,
            issues=[{"severity": "Minor", "description": " tidy "}, "plain string issue"],
            summary="fine",
            verdict="PASS",
            confidence="Medium",
        )
    )
    assert answer.reasoning == "fine"
    assert answer.model_verdict == "pass"
    assert answer.improvements == ["tidy", "plain string issue"]
    assert answer.extra["confidence"] == "medium"
    assert answer.extra["issues"][1] == {"severity": "minor", "description": "plain string issue"}
    assert rubric.go_no_go(answer) == "GO"
    unsure = rubric.parse(code_obj(0.9, 0.9, 0.9, 0.9, confidence="low"))
    assert rubric.go_no_go(unsure) == "UNDETERMINED"  # seed 000: the judge lacks confidence
    explicit = rubric.parse(code_obj(0.8, 0.8, 0.8, 0.8, improvements=["do x"]))
    assert explicit.improvements == ["do x"]


@pytest.mark.parametrize(
    "bad",
    [
        code_obj(1.1, 0.5, 0.5, 0.5),
        code_obj(-0.1, 0.5, 0.5, 0.5),
        code_obj(0.5, 0.5, 0.5, 0.5, issues=[{"severity": "critical", "description": "x"}]),
        code_obj(0.5, 0.5, 0.5, 0.5, confidence="very"),
        {**code_obj(0.5, 0.5, 0.5, 0.5), "issues": "none"},
        {**code_obj(0.5, 0.5, 0.5, 0.5), "issues": [3]},
        {"dimensions": {"correctness": 0.5, "scope_adherence": 0.5, "code_quality": 0.5}},
    ],
)
def test_code_parse_refuses(bad: dict[str, Any]) -> None:
    with pytest.raises(ParseError):
        CodeRubric().parse(bad)


@pytest.mark.parametrize(
    "weights",
    [
        {"correctness": 1.0},
        {"correctness": -1, "scope_adherence": 1, "code_quality": 1, "completeness": 1},
        {"correctness": 0, "scope_adherence": 0, "code_quality": 0, "completeness": 0},
    ],
)
def test_code_thresholds_validate_weights(weights: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        CodeThresholds(weights=weights)


def test_code_thresholds_validate_order() -> None:
    with pytest.raises(ValueError):
        CodeThresholds(reject_below=0.8, pass_min=0.7)
