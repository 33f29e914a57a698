"""The completion rubric (seed 003): did the change finish the task, not how good it is.

There are no scores: the judge answers pass or not, what is missing, whether the change
still moved the task forward, and what only a human can answer. The verdict table is
in bot/judge/rubrics/__init__.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.judge.records import GoNoGo, RubricName, Verdict
from bot.judge.rubrics.base import (
    LIST_ASK,
    STRINGS_SCHEMA,
    TEXT_ASK,
    ContextKind,
    FrozenModel,
    RubricAnswer,
    bounded_list,
    bounded_text,
    object_schema,
    one_of,
    recorded_number,
    recorded_strings,
)
from bot.judge.rubrics.parsing import ParseError, normalized, string_list, text_field, to_number


class CompletionThresholds(FrozenModel):
    missing_items_block_accept: bool = True
    questions_escalate: bool = True


_COMPLETION_TEXT = """\
You are a strict task completion judge for coding agents. Decide whether the change FULLY \
completes the requested task and every directive.

Look for: premature termination (abandoned steps, victory declared without evidence); silent \
fallbacks and placeholders (unfinished markers, mock data); incomplete implementation \
(missing edge cases or error handling); code that cannot work (syntax errors, missing \
dependencies, type errors, imports that do not resolve); requirement drift (feedback not \
incorporated); hallucinated APIs.

Rules: partial completion is not completion; claims without matching file changes fail; \
every directive must be satisfied (feedback from reviewers given while the work went on is \
binding); when in doubt, do not pass. Set forward_progress to true when the change moves the \
task closer to done. When earlier verdicts on this pull request are shown, forward_progress \
means this push resolved at least one of their findings or otherwise moved the task on; set \
addressed_earlier to "all", "some" or "none" of their findings (null when none are shown), \
and keep any finding still open in missing_items. Put questions only a human can answer in \
questions_for_user. Each list holds {list_ask} (questions_for_user at most \
{questions}), the most important first; keep the reason to {text_ask}.

Reply with one JSON object and nothing else:
{{"pass": true|false, "reason": "...", "missing_items": ["..."], "questions_for_user": \
["..."], "forward_progress": true|false, "addressed_earlier": "all"|"some"|"none"|null, \
"convergence_estimate": n or null, "suggested_next_steps": ["..."]}}"""

QUESTIONS_ASKED = 3

Addressed = Literal["all", "some", "none"]
ADDRESSED: tuple[Addressed, ...] = ("all", "some", "none")


def _addressed(value: Any) -> Addressed | None:
    """How many earlier findings the judge says this push addressed; None when it did
    not say (or no earlier verdicts were shown)."""
    return one_of(str(value or "").strip().lower(), ADDRESSED)


@dataclass(frozen=True)
class CompletionExtras:
    """The whole of a completion answer (it has no scores); `passed` is the record's
    `pass`."""

    passed: bool
    missing_items: tuple[str, ...]
    questions_for_user: tuple[str, ...]
    forward_progress: bool
    addressed_earlier: Addressed | None
    convergence_estimate: float | None
    suggested_next_steps: tuple[str, ...]

    def as_record(self) -> dict[str, Any]:
        return {
            "pass": self.passed,
            "missing_items": list(self.missing_items),
            "questions_for_user": list(self.questions_for_user),
            "forward_progress": self.forward_progress,
            "addressed_earlier": self.addressed_earlier,
            "convergence_estimate": self.convergence_estimate,
            "suggested_next_steps": list(self.suggested_next_steps),
        }

    @classmethod
    def from_record(cls, extra: Mapping[str, Any]) -> CompletionExtras:
        return cls(
            passed=extra.get("pass") is True,
            missing_items=recorded_strings(extra.get("missing_items")),
            questions_for_user=recorded_strings(extra.get("questions_for_user")),
            forward_progress=extra.get("forward_progress") is True,
            addressed_earlier=_addressed(extra.get("addressed_earlier")),
            convergence_estimate=recorded_number(extra.get("convergence_estimate")),
            suggested_next_steps=recorded_strings(extra.get("suggested_next_steps")),
        )


def _strict_bool(obj: Mapping[str, Any], key: str) -> bool:
    value = normalized(obj).get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if value is None:
        raise ParseError(f"missing {key!r}")
    raise ParseError(f"{key!r} must be true or false")


class CompletionRubric:
    name: RubricName = RubricName.COMPLETION
    prompt_version: str = "completion/3"
    dimensions: tuple[str, ...] = ()
    context_order: tuple[ContextKind, ...] = ("diff", "file", "ci")
    low_score_below: float | None = None
    dimension_phrases: Mapping[str, tuple[str, ...]] = {}
    verdict_keys: frozenset[str] = frozenset(
        {"pass", "missing_items", "forward_progress", "verdict"}
    )

    def __init__(self, thresholds: CompletionThresholds | None = None) -> None:
        self.thresholds = thresholds or CompletionThresholds()

    def instructions(self) -> str:
        return _COMPLETION_TEXT.format(
            list_ask=LIST_ASK, text_ask=TEXT_ASK, questions=QUESTIONS_ASKED
        )

    def response_schema(self) -> dict[str, Any]:
        return object_schema(
            {
                "pass": {"type": "boolean"},
                "reason": bounded_text(),
                "missing_items": STRINGS_SCHEMA,
                "questions_for_user": bounded_list(QUESTIONS_ASKED),
                "forward_progress": {"type": "boolean"},
                "addressed_earlier": {"type": ["string", "null"], "enum": [*ADDRESSED, None]},
                "convergence_estimate": {"type": ["number", "null"]},
                "suggested_next_steps": STRINGS_SCHEMA,
            }
        )

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer[CompletionExtras]:
        passed = _strict_bool(obj, "pass")
        top = normalized(obj)
        # a failing answer must say whether progress was made; a passing one need not
        progress = (
            _strict_bool(obj, "forward_progress")
            if not passed or "forward_progress" in top
            else True
        )
        convergence_raw = top.get("convergence_estimate")
        convergence = None
        if convergence_raw is not None:
            try:
                convergence = to_number(convergence_raw, "convergence_estimate")
            except ParseError:
                convergence = None
        missing = string_list(obj, "missing_items")
        next_steps = string_list(obj, "suggested_next_steps", "next_steps")
        extras = CompletionExtras(
            passed=passed,
            missing_items=tuple(missing),
            questions_for_user=tuple(string_list(obj, "questions_for_user", "questions")),
            forward_progress=progress,
            addressed_earlier=_addressed(top.get("addressed_earlier")),
            convergence_estimate=convergence,
            suggested_next_steps=tuple(next_steps),
        )
        already_missing = set(missing)  # a list here made the filter quadratic
        return RubricAnswer(
            scores={},
            average=None,
            reasoning=text_field(obj, "reason", "reasoning", "summary"),
            improvements=missing + [s for s in next_steps if s not in already_missing],
            model_verdict="pass" if passed else "fail",
            extras=extras,
        )

    def read_extras(self, extra: Mapping[str, Any]) -> CompletionExtras:
        return CompletionExtras.from_record(extra)

    def decide(self, answer: RubricAnswer[CompletionExtras]) -> Verdict:
        t = self.thresholds
        extras = answer.extras
        if extras.passed:
            if t.missing_items_block_accept and extras.missing_items:
                return Verdict.IMPROVE
            return Verdict.ACCEPT
        if t.questions_escalate and extras.questions_for_user:
            return Verdict.ESCALATE
        if extras.forward_progress:
            return Verdict.IMPROVE
        return Verdict.REJECT

    def go_no_go(self, answer: RubricAnswer[CompletionExtras]) -> GoNoGo:
        return "GO" if self.decide(answer) is Verdict.ACCEPT else "NO-GO"
