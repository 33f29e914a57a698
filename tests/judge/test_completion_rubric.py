"""The completion rubric (`bot/judge/rubrics/completion.py`): the truth table over pass, missing
items, questions and progress, its options, and the reply shapes it accepts or refuses."""

from __future__ import annotations

from typing import Any

import pytest

from bot.judge.records import Verdict
from bot.judge.rubrics.completion import CompletionRubric, CompletionThresholds
from bot.judge.rubrics.parsing import ParseError
from tests.support.rubric_helpers import completion


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


@pytest.mark.parametrize(
    ("given", "read"),
    [("all", "all"), (" Some ", "some"), ("none", "none"), (None, None), ("maybe", None)],
)
def test_whether_earlier_findings_were_addressed_is_kept(given: Any, read: str | None) -> None:
    """The judge says how much of the earlier verdicts' findings this push addressed; an
    answer outside the schema reads as not said, never as a refusal."""
    answer = CompletionRubric().parse(completion(addressed_earlier=given, forward_progress=True))
    assert answer.extra["addressed_earlier"] == read


def test_the_instructions_ask_for_progress_against_earlier_verdicts() -> None:
    text = CompletionRubric().instructions()
    assert "earlier verdicts" in text and "addressed_earlier" in text
    assert "binding" in text


def test_improvements_are_missing_items_then_next_steps_not_already_missing() -> None:
    """Repeats among the next steps stay; only the ones already missing are left out."""
    answer = CompletionRubric().parse(
        completion(
            missing_items=["a", "b", "a"],
            suggested_next_steps=["b", "c", "c", "a", "d", " b "],
        )
    )
    assert answer.improvements == ["a", "b", "a", "c", "c", "d"]
