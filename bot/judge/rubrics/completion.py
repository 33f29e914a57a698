"""The completion rubric (seed 003): did the change finish the task, not how good it is.

There are no scores: the judge answers pass or not, what is missing, whether the change
still moved the task forward, and what only a human can answer. The verdict table is
in bot/judge/rubrics/__init__.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

ADDRESSED = ("all", "some", "none")


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

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer:
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
        addressed = str(top.get("addressed_earlier") or "").strip().lower()
        missing = string_list(obj, "missing_items")
        next_steps = string_list(obj, "suggested_next_steps", "next_steps")
        extra: dict[str, Any] = {
            "pass": passed,
            "missing_items": missing,
            "questions_for_user": string_list(obj, "questions_for_user", "questions"),
            "forward_progress": progress,
            "addressed_earlier": addressed if addressed in ADDRESSED else None,
            "convergence_estimate": convergence,
            "suggested_next_steps": next_steps,
        }
        already_missing = set(missing)  # a list here made the filter quadratic
        return RubricAnswer(
            scores={},
            average=None,
            reasoning=text_field(obj, "reason", "reasoning", "summary"),
            improvements=missing + [s for s in next_steps if s not in already_missing],
            model_verdict="pass" if passed else "fail",
            extra=extra,
        )

    def decide(self, answer: RubricAnswer) -> Verdict:
        t = self.thresholds
        if answer.extra.get("pass") is True:
            if t.missing_items_block_accept and answer.extra.get("missing_items"):
                return Verdict.IMPROVE
            return Verdict.ACCEPT
        if t.questions_escalate and answer.extra.get("questions_for_user"):
            return Verdict.ESCALATE
        if answer.extra.get("forward_progress") is True:
            return Verdict.IMPROVE
        return Verdict.REJECT

    def go_no_go(self, answer: RubricAnswer) -> GoNoGo:
        return "GO" if self.decide(answer) is Verdict.ACCEPT else "NO-GO"
