"""The code rubric (seed 002): four dimensions in 0.0-1.0 and the issues found.

Code needs more than scores: a major issue (a test written to pass rather than to
verify, scope creep) blocks an accept whatever the scores, and a judge that says it has
low confidence hands the change to a human instead of its guess becoming a gate. The
verdict table is in bot/judge/rubrics/__init__.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from bot.judge.records import GoNoGo, RubricName, Verdict
from bot.judge.rubrics.base import (
    ITEM_CHARS,
    LIST_ASK,
    STRINGS_SCHEMA,
    TEXT_ASK,
    ContextKind,
    FrozenModel,
    RubricAnswer,
    average_record,
    bounded_list,
    bounded_text,
    exact,
    object_schema,
    one_of,
    recorded_average,
    scores_go_no_go,
)
from bot.judge.rubrics.parsing import (
    ParseError,
    model_label,
    normalized,
    raw_scores,
    reported_average,
    string_list,
    text_field,
    to_unit_score,
)

CODE_DIMENSIONS = ("correctness", "scope_adherence", "code_quality", "completeness")
# fmt: off
# (one phrase per line would make the lists hard to read; they are data, not code)
CODE_PHRASES: Mapping[str, tuple[str, ...]] = {
    "correctness": (
        "correctness", "correct", "correctly", "incorrect", "incorrectly", "bug",
        "wrong result", "wrong output", "logic error", "off-by-one", "do what was asked",
        "does what was asked", "test the right thing",
    ),
    "scope_adherence": (
        "scope adherence", "scope", "on task", "off task", "scope creep", "out of scope",
        "unrelated change", "gold-plate", "focused change", "minimal change",
    ),
    "code_quality": (
        "code quality", "readability", "readable", "maintainability", "maintainable",
        "clean code", "idiomatic", "hack", "hacky", "project's pattern", "project convention",
        "naming", "code style", "complexity", "duplication", "refactor", "magic number",
    ),
    "completeness": (
        "completeness", "complete", "incomplete", "stub", "placeholder", "commented-out code",
        "edge case", "unfinished", "partial", "todo",
    ),
}
# fmt: on
"""The words a judge's reasoning names each dimension by, in base form, for tagging
(bot/judge/tagging/thesaurus.py reads them from `Rubric.dimension_phrases`): seed 002's criteria."""
Confidence = Literal["high", "medium", "low"]
CONFIDENCES: tuple[Confidence, ...] = ("high", "medium", "low")
IssueSeverity = Literal["major", "minor"]
SEVERITIES: tuple[IssueSeverity, ...] = ("major", "minor")


@dataclass(frozen=True)
class CodeIssue:
    severity: IssueSeverity
    description: str

    def as_record(self) -> dict[str, str]:
        return {"severity": self.severity, "description": self.description}

    @classmethod
    def from_record(cls, value: Any) -> CodeIssue:
        if not isinstance(value, Mapping):
            return cls("minor", str(value))
        description = value.get("description", "")
        severity: IssueSeverity = "major" if value.get("severity") == "major" else "minor"
        return cls(severity, description if isinstance(description, str) else str(description))


@dataclass(frozen=True)
class CodeExtras:
    issues: tuple[CodeIssue, ...]
    confidence: Confidence | None
    """None when the judge did not say."""
    reported_average: float | str | None = None
    """The composite score the judge reported when it was off from the weighted one."""

    @property
    def major_issue(self) -> bool:
        return any(issue.severity == "major" for issue in self.issues)

    def as_record(self) -> dict[str, Any]:
        return {
            "issues": [issue.as_record() for issue in self.issues],
            "confidence": self.confidence,
            **average_record(self.reported_average),
        }

    @classmethod
    def from_record(cls, extra: Mapping[str, Any]) -> CodeExtras:
        issues = extra.get("issues")
        confidence = extra.get("confidence")
        return cls(
            tuple(CodeIssue.from_record(i) for i in issues) if isinstance(issues, list) else (),
            one_of(confidence, CONFIDENCES) if isinstance(confidence, str) else None,
            recorded_average(extra),
        )


class CodeThresholds(FrozenModel):
    weights: dict[str, float] = Field(
        default_factory=lambda: {
            "correctness": 0.4,
            "scope_adherence": 0.2,
            "code_quality": 0.2,
            "completeness": 0.2,
        }
    )
    pass_min: float = Field(default=0.7, ge=0, le=1)
    reject_below: float = Field(default=0.4, ge=0, le=1)
    major_issue_correctness_below: float = Field(default=0.7, ge=0, le=1)
    low_confidence_escalates: bool = True

    @model_validator(mode="after")
    def _valid(self) -> CodeThresholds:
        if set(self.weights) != set(CODE_DIMENSIONS):
            raise ValueError(f"weights must name exactly {', '.join(CODE_DIMENSIONS)}")
        if any(w < 0 for w in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise ValueError("weights must be non-negative and not all zero")
        if self.reject_below > self.pass_min:
            raise ValueError("reject_below must not exceed pass_min")
        return self


_CODE_TEXT = """\
You are a code review judge. Be harsh but fair; do not grade on a curve.
Score each dimension from 0.0 to 1.0:

| Dimension | What it measures |
|-----------|------------------|
| correctness | Does the code do what was asked? Do the tests test the right thing? |
| scope_adherence | Did the change stay on task: no unrelated edits, no gold-plating? |
| code_quality | Follows the project's patterns; clean, readable, no hacks? |
| completeness | No stubs, placeholder markers, commented-out code or missing edge cases? |

Flag any test that looks written to pass rather than to verify, and any scope creep, \
as issues with severity "major" or "minor".
Verdict labels: pass when every dimension >= {pass_min} and there is no major issue; \
fail when any dimension < {reject_below}; partial otherwise. Set confidence to low when \
you cannot tell from what you were shown. List issues and improvements as {list_ask}, \
the most important first; keep the summary to {text_ask}.

Reply with one JSON object and nothing else:
{{"verdict": "pass|partial|fail", "score": n, "dimensions": {{"correctness": n, \
"scope_adherence": n, "code_quality": n, "completeness": n}}, "issues": [{{"severity": \
"major|minor", "description": "..."}}], "summary": "...", "improvements": ["..."], \
"confidence": "high|medium|low"}}"""


def _issues(obj: Mapping[str, Any]) -> tuple[CodeIssue, ...]:
    value = normalized(obj).get("issues")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ParseError("'issues' must be a list")
    out: list[CodeIssue] = []
    for item in value:
        if isinstance(item, str):
            out.append(CodeIssue("minor", item.strip()))
            continue
        if not isinstance(item, Mapping):
            raise ParseError("each issue must be an object or a string")
        inner = normalized(item)
        label = str(inner.get("severity", "minor")).strip().lower()
        severity = one_of(label, SEVERITIES)
        if severity is None:
            raise ParseError(f"issue severity {label!r} is not major or minor")
        description = inner.get("description", "")
        out.append(
            CodeIssue(
                severity,
                description.strip() if isinstance(description, str) else json.dumps(description),
            )
        )
    return tuple(out)


def _confidence(obj: Mapping[str, Any]) -> Confidence | None:
    value = normalized(obj).get("confidence")
    if value is None:
        return None
    label = one_of(str(value).strip().lower(), CONFIDENCES)
    if label is None:
        raise ParseError(f"confidence {value!r} is not high, medium or low")
    return label


class CodeRubric:
    name: RubricName = RubricName.CODE
    prompt_version: str = "code/2"
    dimensions: tuple[str, ...] = CODE_DIMENSIONS
    context_order: tuple[ContextKind, ...] = ("diff", "file", "ci")
    low_score_below: float | None = CodeThresholds().pass_min
    dimension_phrases: Mapping[str, tuple[str, ...]] = CODE_PHRASES
    verdict_keys: frozenset[str] = frozenset({"scores", "dimensions", "verdict", *CODE_DIMENSIONS})

    def __init__(self, thresholds: CodeThresholds | None = None) -> None:
        self.thresholds = thresholds or CodeThresholds()

    def instructions(self) -> str:
        return _CODE_TEXT.format(
            pass_min=self.thresholds.pass_min,
            reject_below=self.thresholds.reject_below,
            list_ask=LIST_ASK,
            text_ask=TEXT_ASK,
        )

    def response_schema(self) -> dict[str, Any]:
        unit = {"type": "number", "minimum": 0, "maximum": 1}
        issue = object_schema(
            {
                "severity": {"type": "string", "enum": ["major", "minor"]},
                "description": bounded_text(ITEM_CHARS),
            }
        )
        return object_schema(
            {
                "verdict": {"type": "string", "enum": ["pass", "partial", "fail"]},
                "score": unit,
                "dimensions": object_schema({d: unit for d in self.dimensions}),
                "issues": bounded_list(item=issue),
                "summary": bounded_text(),
                "improvements": STRINGS_SCHEMA,
                "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
            }
        )

    def weighted(self, scores: Mapping[str, float]) -> float:
        w = self.thresholds.weights
        return sum(w[d] * scores[d] for d in self.dimensions) / sum(w.values())

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer[CodeExtras]:
        raw = raw_scores(obj, self.dimensions, nested_keys=("dimensions", "scores"))
        scores = {d: to_unit_score(v, d) for d, v in raw.items()}
        issues = _issues(obj)
        confidence = _confidence(obj)
        top = normalized(obj)
        computed = round(self.weighted(scores), 4)
        reported = reported_average(top.get("score", top.get("average")), computed)
        improvements = string_list(obj, "improvements", "suggestions")
        if not improvements:
            improvements = [i.description for i in issues if i.description]
        return RubricAnswer(
            scores=scores,
            average=computed,
            reasoning=text_field(obj, "summary", "reasoning", "reason"),
            improvements=improvements,
            model_verdict=model_label(obj, "verdict"),
            extras=CodeExtras(issues, confidence, reported),
        )

    def read_extras(self, extra: Mapping[str, Any]) -> CodeExtras:
        return CodeExtras.from_record(extra)

    def decide(self, answer: RubricAnswer[CodeExtras]) -> Verdict:
        t = self.thresholds
        if t.low_confidence_escalates and answer.extras.confidence == "low":
            return Verdict.ESCALATE
        values = [answer.scores[d] for d in self.dimensions]
        major = answer.extras.major_issue
        if any(exact(v) < exact(t.reject_below) for v in values):
            return Verdict.REJECT
        correctness = exact(answer.scores["correctness"])
        if major and correctness < exact(t.major_issue_correctness_below):
            return Verdict.REJECT
        if all(exact(v) >= exact(t.pass_min) for v in values) and not major:
            return Verdict.ACCEPT
        return Verdict.IMPROVE

    def go_no_go(self, answer: RubricAnswer[CodeExtras]) -> GoNoGo:
        # Seed 000: a judge that lacks confidence is UNDETERMINED; its scores are a guess,
        # and a guess must not block (the same reason `decide` escalates it).
        if self.thresholds.low_confidence_escalates and answer.extras.confidence == "low":
            return "UNDETERMINED"
        return scores_go_no_go(answer.scores, self.thresholds.pass_min)
