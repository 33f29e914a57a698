"""Rubric thresholds: every boundary, decided from scores and never from the model's label."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from bot.judge.parsing import ParseError
from bot.judge.records import RubricName, Verdict
from bot.judge.rubrics import (
    CodeRubric,
    CodeThresholds,
    CompletionRubric,
    CompletionThresholds,
    ContentRubric,
    ContentThresholds,
    RubricAnswer,
    content_verdict,
    get_rubric,
    go_no_go,
)

DIMS = ("semantic", "pragmatic", "syntactic")


def content_oracle(s: int, p: int, x: int) -> str:
    """Independent reading of seed 000's table, in integer arithmetic."""
    scores = (s, p, x)
    if min(scores) < 2:
        return "reject"
    # average >= 3.5  <=>  2 * sum >= 7 * n
    if min(scores) >= 3 and 2 * sum(scores) >= 7 * 3:
        return "accept"
    return "improve"


ALL_COMBOS = list(itertools.product(range(1, 6), repeat=3))


def test_all_125_combinations_are_covered() -> None:
    """The table below really is every combination."""
    assert len(ALL_COMBOS) == 125
    assert {content_oracle(*c) for c in ALL_COMBOS} == {"accept", "improve", "reject"}


@pytest.mark.parametrize("combo", ALL_COMBOS, ids=lambda c: "-".join(map(str, c)))
def test_content_verdict_matches_oracle(combo: tuple[int, int, int]) -> None:
    """decide() agrees with the independent oracle for every score combination."""
    rubric = ContentRubric()
    answer = rubric.parse({"scores": dict(zip(DIMS, combo, strict=True))})
    assert rubric.decide(answer).value == content_oracle(*combo)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ((3, 3, 4), Verdict.IMPROVE),  # average 3.33
        ((3, 4, 4), Verdict.ACCEPT),  # average 3.67
        ((4, 4, 3), Verdict.ACCEPT),
        ((3, 3, 5), Verdict.ACCEPT),  # 11/3 = 3.67
        ((3, 3, 3), Verdict.IMPROVE),  # all >= 3 but average 3.0
        ((2, 5, 5), Verdict.IMPROVE),  # one < 3 but all >= 2
        ((1, 5, 5), Verdict.REJECT),  # any 1
        ((5, 5, 1), Verdict.REJECT),
        ((2, 2, 2), Verdict.IMPROVE),
        ((5, 5, 5), Verdict.ACCEPT),
    ],
)
def test_content_named_boundaries(scores: tuple[int, int, int], expected: Verdict) -> None:
    """The boundaries the seed and the brief name explicitly."""
    assert content_verdict(dict(zip(DIMS, scores, strict=True))) is expected


def test_content_average_exactly_at_threshold_accepts() -> None:
    """An average equal to the threshold accepts: compared exactly, not after rounding."""
    # 4 dimensions summing to 14 average exactly 3.5
    assert content_verdict({"a": 3, "b": 4, "c": 3, "d": 4}) is Verdict.ACCEPT
    assert content_verdict({"a": 3, "b": 3, "c": 3, "d": 4}) is Verdict.IMPROVE
    # a threshold that is not a binary fraction is still compared exactly
    t = ContentThresholds(accept_average=3.4)
    assert content_verdict({"a": 3, "b": 4, "c": 3, "d": 3, "e": 4}, t) is Verdict.ACCEPT


def test_model_label_is_recorded_but_never_decides() -> None:
    """A model saying accept over scores that say reject is rejected."""
    rubric = ContentRubric()
    answer = rubric.parse(
        {"verdict": "accept", "scores": {"semantic": 1, "pragmatic": 5, "syntactic": 5}}
    )
    assert answer.model_verdict == "accept"
    assert rubric.decide(answer) is Verdict.REJECT


@pytest.mark.parametrize(
    ("scores", "expected"),
    [((3, 3, 3), "GO"), ((5, 5, 3), "GO"), ((2, 5, 5), "NO-GO"), ((5, 5, 1), "NO-GO")],
)
def test_go_no_go_is_phase_ab_rule(scores: tuple[int, int, int], expected: str) -> None:
    """GO when all >= 3, independent of the phase C average rule."""
    as_dict = dict(zip(DIMS, scores, strict=True))
    assert go_no_go(as_dict) == expected
    rubric = ContentRubric()
    assert rubric.go_no_go(rubric.parse(as_dict)) == expected


def test_go_no_go_without_scores_is_undetermined() -> None:
    assert go_no_go({}) == "UNDETERMINED"


def test_content_thresholds_are_configurable_and_validated() -> None:
    """Custom thresholds change decisions; inconsistent ones are refused."""
    strict = ContentRubric(ContentThresholds(accept_min=4, accept_average=4.0))
    answer = strict.parse({"semantic": 3, "pragmatic": 5, "syntactic": 5})
    assert strict.decide(answer) is Verdict.IMPROVE
    with pytest.raises(ValueError):
        ContentThresholds(reject_below=4, accept_min=3)
    with pytest.raises(ValueError):
        ContentThresholds(accept_average=6)


def test_content_verdict_refuses_empty_scores() -> None:
    with pytest.raises(ValueError):
        content_verdict({})


def test_content_average_recorded_rounded() -> None:
    answer = ContentRubric().parse({"semantic": 3, "pragmatic": 3, "syntactic": 4})
    assert answer.average == 3.33


# ----------------------------------------------------------------------------- code


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


# ----------------------------------------------------------------------------- completion


def completion(**kw: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "pass": False,
        "reason": "r",
        "missing_items": [],
        "questions_for_user": [],
        "forward_progress": False,
        "suggested_next_steps": [],
    }
    obj.update(kw)
    return obj


@pytest.mark.parametrize("passed", [True, False])
@pytest.mark.parametrize("missing", [[], ["tests"]])
@pytest.mark.parametrize("questions", [[], ["which db?"]])
@pytest.mark.parametrize("progress", [True, False])
def test_completion_truth_table(
    passed: bool, missing: list[str], questions: list[str], progress: bool
) -> None:
    """All 16 combinations of the four inputs that matter."""
    if passed:
        expected = "improve" if missing else "accept"
    elif questions:
        expected = "escalate"
    elif progress:
        expected = "improve"
    else:
        expected = "reject"
    rubric = CompletionRubric()
    answer = rubric.parse(
        completion(
            **{
                "pass": passed,
                "missing_items": missing,
                "questions_for_user": questions,
                "forward_progress": progress,
            }
        )
    )
    assert rubric.decide(answer).value == expected
    assert rubric.go_no_go(answer) == ("GO" if expected == "accept" else "NO-GO")


def test_completion_accepts_seed_camel_case_and_string_booleans() -> None:
    """Seed 003's zod schema uses camelCase keys."""
    rubric = CompletionRubric()
    answer = rubric.parse(
        {
            "pass": "false",
            "reason": "half done",
            "missingItems": ["docs"],
            "questionsForUser": [],
            "forwardProgress": True,
            "convergenceEstimate": "0.5",
            "suggestedNextSteps": ["write docs", "docs"],
        }
    )
    assert rubric.decide(answer) is Verdict.IMPROVE
    assert answer.extra["convergence_estimate"] == 0.5
    assert answer.improvements == ["docs", "write docs"]
    assert answer.model_verdict == "fail"
    assert answer.scores == {} and answer.average is None


def test_completion_options() -> None:
    lenient = CompletionRubric(
        CompletionThresholds(missing_items_block_accept=False, questions_escalate=False)
    )
    assert lenient.decide(lenient.parse(completion(**{"pass": True, "missing_items": ["x"]}))) is (
        Verdict.ACCEPT
    )
    assert (
        lenient.decide(lenient.parse(completion(questions_for_user=["q"], forward_progress=True)))
        is Verdict.IMPROVE
    )


def test_completion_passing_answer_may_omit_progress() -> None:
    answer = CompletionRubric().parse({"pass": True, "reason": "done"})
    assert answer.extra["forward_progress"] is True


@pytest.mark.parametrize(
    "bad",
    [
        {"reason": "no pass field"},
        {"pass": "yes"},
        {"pass": 1},
        {"pass": False, "reason": "progress unknown"},
        {"pass": False, "forward_progress": "maybe"},
        {"pass": False, "forward_progress": False, "missing_items": {"a": 1}},
    ],
)
def test_completion_parse_refuses(bad: dict[str, Any]) -> None:
    with pytest.raises(ParseError):
        CompletionRubric().parse(bad)


def test_completion_unparseable_convergence_is_dropped() -> None:
    """The estimate is advisory, so a bad one is dropped rather than failing the round."""
    answer = CompletionRubric().parse(completion(convergence_estimate="soon"))
    assert answer.extra["convergence_estimate"] is None


# ----------------------------------------------------------------------------- shared


@pytest.mark.parametrize("name", list(RubricName))
def test_get_rubric_and_protocol_surface(name: RubricName) -> None:
    """Each rubric has instructions, a valid response schema, and a prompt version."""
    rubric = get_rubric(name)
    assert rubric.name is name
    assert get_rubric(name.value).name is name
    assert rubric.prompt_version.startswith(name.value + "/")
    assert "JSON" in rubric.instructions()
    schema = rubric.response_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])


def test_response_schemas_accept_what_parse_accepts() -> None:
    """A reply valid under the structured-output schema parses and decides."""
    samples: dict[RubricName, dict[str, Any]] = {
        RubricName.CONTENT: {
            "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
            "average": 4.33,
            "verdict": "accept",
            "reasoning": "ok",
            "improvements": [],
        },
        RubricName.CODE: {
            "verdict": "pass",
            "score": 0.8,
            "dimensions": {
                "correctness": 0.8,
                "scope_adherence": 0.8,
                "code_quality": 0.8,
                "completeness": 0.8,
            },
            "issues": [],
            "summary": "ok",
            "improvements": [],
            "confidence": "high",
        },
        RubricName.COMPLETION: completion(**{"pass": True, "convergence_estimate": None}),
    }
    for name, sample in samples.items():
        rubric = get_rubric(name)
        jsonschema.validate(sample, rubric.response_schema())
        assert rubric.decide(rubric.parse(sample)) is Verdict.ACCEPT


def test_instructions_reflect_thresholds() -> None:
    text = ContentRubric(ContentThresholds(accept_average=4.0)).instructions()
    assert "average >= 4.0" in text
    assert "0.8" in CodeRubric(CodeThresholds(pass_min=0.8)).instructions()


@pytest.mark.parametrize(
    ("name", "thresholds"),
    [
        (RubricName.CONTENT, CodeThresholds()),
        (RubricName.CODE, CompletionThresholds()),
        (RubricName.COMPLETION, ContentThresholds()),
    ],
)
def test_get_rubric_refuses_mismatched_thresholds(name: RubricName, thresholds: Any) -> None:
    with pytest.raises(TypeError):
        get_rubric(name, thresholds)


def test_get_rubric_refuses_unknown_name() -> None:
    with pytest.raises(ValueError):
        get_rubric("vibes")


def test_rubric_answer_is_plain_data() -> None:
    answer = RubricAnswer({"a": 1}, 1.0, "r", [], None)
    assert answer.extra == {}
