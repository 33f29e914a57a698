"""The three rubrics a judge can score against, and how scores become verdicts.

Every verdict is computed from the scores by `Rubric.decide`; the label the
model wrote is kept as `model_verdict` for calibration only.

content (KLS dimensions semantic/pragmatic/syntactic, whole scores 1-5; seed 000)
    reject   any dimension < 2
    accept   every dimension >= 3 and the average >= 3.5
    improve  everything else
  The seed words improve as "any < 3 or average < 3.5, but all >= 2"; with the
  reject rule checked first that is exactly "everything else", so (2,5,5) is
  improve and (3,3,4) (average 3.33) is improve. The average is compared
  exactly (3 * 3.5 <= sum), not after rounding; the recorded average is
  rounded to two places. `go_no_go` is the separate phase A/B pre-push label:
  GO when every dimension >= 3 (so (3,3,3) is GO yet improve in phase C).

code (seed 002: correctness, scope_adherence, code_quality, completeness in 0.0-1.0;
      weights .4/.2/.2/.2 give the composite average)
    escalate a reported confidence of "low" (the judge itself says it cannot
             tell; seed 000 treats a judge lacking confidence as undetermined,
             and here a human looks instead of a guess becoming a gate)
    reject   any dimension < 0.4, or a major issue while correctness < 0.7
    accept   every dimension >= 0.7 and no major issue
    improve  everything else (including all >= 0.7 with a major issue)

completion (seed 003: pass, reason, missing_items, questions_for_user,
            forward_progress, suggested_next_steps)
    accept   pass and no missing items (a pass that lists missing items
             contradicts itself and is improve)
    escalate not pass and the judge has questions for the user
    improve  not pass, with forward progress
    reject   not pass, no forward progress
  The seed's fail-open (a failed judge call returns pass=true) is not copied:
  failures are undetermined rounds, decided by the engine.

These are per-round verdicts. How rounds combine (quick -> deep -> tiebreaker,
the seed's "escalate when models disagree", whether a quick reject is final) is
the protocol's job (bot/judge/protocol.py); a rubric escalates only when one
judge says it cannot decide (code: low confidence; completion: questions only
a human can answer).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.judge.parsing import (
    ParseError,
    model_label,
    normalized,
    raw_scores,
    reconcile_average,
    string_list,
    text_field,
    to_int_score,
    to_number,
    to_unit_score,
)
from bot.judge.records import GoNoGo, RubricName, Verdict

__all__ = [
    "CodeRubric",
    "CodeThresholds",
    "CompletionRubric",
    "CompletionThresholds",
    "ContentRubric",
    "ContentThresholds",
    "ParseError",
    "Rubric",
    "RubricAnswer",
    "RubricName",
    "Thresholds",
    "content_verdict",
    "get_rubric",
    "go_no_go",
]


@dataclass(frozen=True)
class RubricAnswer:
    scores: dict[str, float]
    average: float | None
    reasoning: str
    improvements: list[str]
    model_verdict: str | None
    extra: dict[str, Any] = field(default_factory=dict)


class Rubric(Protocol):
    name: RubricName
    prompt_version: str
    dimensions: tuple[str, ...]
    verdict_keys: frozenset[str]

    def instructions(self) -> str:
        """Rubric text for the system prompt."""

    def response_schema(self) -> dict[str, Any]:
        """JSON Schema of the reply, for providers with structured output."""

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer:
        """Validate one extracted reply object; raises ParseError."""

    def decide(self, answer: RubricAnswer) -> Verdict:
        """The verdict from the scores, never from the model's own label."""

    def go_no_go(self, answer: RubricAnswer) -> GoNoGo:
        """The phase A/B pre-push label for this answer."""


def _exact(value: float) -> Fraction:
    # via str so 0.7 means 7/10, as the model wrote it, not the nearest binary float
    return Fraction(str(value))


def _mean_at_least(values: Iterable[float], threshold: float) -> bool:
    vals = [_exact(v) for v in values]
    return sum(vals, Fraction(0)) >= _exact(threshold) * len(vals)


# --------------------------------------------------------------------------- content

CONTENT_DIMENSIONS = ("semantic", "pragmatic", "syntactic")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ContentThresholds(_Frozen):
    accept_min: int = Field(default=3, ge=1, le=5)
    accept_average: float = Field(default=3.5, ge=1, le=5)
    reject_below: int = Field(default=2, ge=1, le=5)
    go_min: int = Field(default=3, ge=1, le=5)

    @model_validator(mode="after")
    def _ordered(self) -> ContentThresholds:
        if self.reject_below > self.accept_min:
            raise ValueError("reject_below must not exceed accept_min")
        return self


def content_verdict(scores: Mapping[str, float], t: ContentThresholds | None = None) -> Verdict:
    t = t or ContentThresholds()
    values = list(scores.values())
    if not values:
        raise ValueError("no scores")
    if any(v < t.reject_below for v in values):
        return Verdict.REJECT
    if all(v >= t.accept_min for v in values) and _mean_at_least(values, t.accept_average):
        return Verdict.ACCEPT
    return Verdict.IMPROVE


def go_no_go(scores: Mapping[str, float], minimum: float = 3) -> GoNoGo:
    """Phase A/B label: GO when every score >= minimum; no scores is UNDETERMINED."""
    if not scores:
        return "UNDETERMINED"
    return "GO" if all(v >= minimum for v in scores.values()) else "NO-GO"


_CONTENT_TEXT = """\
Score the change on three dimensions of the KLS quality framework, each a whole number 1-5.

| Dimension | Question | Criteria |
|-----------|----------|----------|
| semantic | Does it accurately represent the domain? | Factual correctness, domain \
terminology, no contradictions |
| pragmatic | Does it enable the intended decisions or actions? | Actionable, useful, \
addresses the task goal |
| syntactic | Is it internally consistent and well-structured? | Format compliance, \
structural completeness, no broken references |

Scale: 1 poor (major issues, blocks use); 2 below standard (significant gaps); 3 adequate \
(meets the minimum bar); 4 good (clear, useful, few issues); 5 excellent (exemplary, no issues).

Verdict labels: accept when every dimension >= {accept_min} and the average >= \
{accept_average}; reject when any dimension < {reject_below}; improve otherwise. \
List concrete improvements whenever a dimension is below 5.

Reply with one JSON object and nothing else:
{{"scores": {{"semantic": n, "pragmatic": n, "syntactic": n}}, "average": n, \
"verdict": "accept|improve|reject", "reasoning": "...", "improvements": ["..."]}}"""


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_STRINGS = {"type": "array", "items": {"type": "string"}}


class ContentRubric:
    name: RubricName = RubricName.CONTENT
    prompt_version: str = "content/1"
    dimensions: tuple[str, ...] = CONTENT_DIMENSIONS
    verdict_keys: frozenset[str] = frozenset({"scores", "verdict", *CONTENT_DIMENSIONS})

    def __init__(self, thresholds: ContentThresholds | None = None) -> None:
        self.thresholds = thresholds or ContentThresholds()

    def instructions(self) -> str:
        return _CONTENT_TEXT.format(**self.thresholds.model_dump())

    def response_schema(self) -> dict[str, Any]:
        score = {"type": "integer", "minimum": 1, "maximum": 5}
        return _object(
            {
                "scores": _object({d: score for d in self.dimensions}),
                "average": {"type": "number"},
                "verdict": {"type": "string", "enum": ["accept", "improve", "reject"]},
                "reasoning": {"type": "string"},
                "improvements": _STRINGS,
            }
        )

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer:
        raw = raw_scores(obj, self.dimensions)
        scores: dict[str, float] = {d: to_int_score(v, d, 1, 5) for d, v in raw.items()}
        extra: dict[str, Any] = {}
        top = normalized(obj)
        computed = round(sum(scores.values()) / len(scores), 2)
        average = reconcile_average(top.get("average", top.get("avg")), computed, extra)
        return RubricAnswer(
            scores=scores,
            average=average,
            reasoning=text_field(obj, "reasoning", "reason", "findings", "summary"),
            improvements=string_list(obj, "improvements", "revision_suggestions"),
            model_verdict=model_label(obj, "verdict"),
            extra=extra,
        )

    def decide(self, answer: RubricAnswer) -> Verdict:
        return content_verdict(answer.scores, self.thresholds)

    def go_no_go(self, answer: RubricAnswer) -> GoNoGo:
        return go_no_go(answer.scores, self.thresholds.go_min)


# --------------------------------------------------------------------------- code

CODE_DIMENSIONS = ("correctness", "scope_adherence", "code_quality", "completeness")
Confidence = Literal["high", "medium", "low"]


class CodeThresholds(_Frozen):
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
you cannot tell from what you were shown.

Reply with one JSON object and nothing else:
{{"verdict": "pass|partial|fail", "score": n, "dimensions": {{"correctness": n, \
"scope_adherence": n, "code_quality": n, "completeness": n}}, "issues": [{{"severity": \
"major|minor", "description": "..."}}], "summary": "...", "improvements": ["..."], \
"confidence": "high|medium|low"}}"""


def _issues(obj: Mapping[str, Any]) -> list[dict[str, str]]:
    value = normalized(obj).get("issues")
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError("'issues' must be a list")
    out: list[dict[str, str]] = []
    for item in value:
        if isinstance(item, str):
            out.append({"severity": "minor", "description": item.strip()})
            continue
        if not isinstance(item, Mapping):
            raise ParseError("each issue must be an object or a string")
        inner = normalized(item)
        severity = str(inner.get("severity", "minor")).strip().lower()
        if severity not in ("major", "minor"):
            raise ParseError(f"issue severity {severity!r} is not major or minor")
        description = inner.get("description", "")
        out.append(
            {
                "severity": severity,
                "description": description.strip()
                if isinstance(description, str)
                else json.dumps(description),
            }
        )
    return out


def _confidence(obj: Mapping[str, Any]) -> Confidence | None:
    value = normalized(obj).get("confidence")
    if value is None:
        return None
    label = str(value).strip().lower()
    if label == "high":
        return "high"
    if label == "medium":
        return "medium"
    if label == "low":
        return "low"
    raise ParseError(f"confidence {value!r} is not high, medium or low")


class CodeRubric:
    name: RubricName = RubricName.CODE
    prompt_version: str = "code/1"
    dimensions: tuple[str, ...] = CODE_DIMENSIONS
    verdict_keys: frozenset[str] = frozenset({"scores", "dimensions", "verdict", *CODE_DIMENSIONS})

    def __init__(self, thresholds: CodeThresholds | None = None) -> None:
        self.thresholds = thresholds or CodeThresholds()

    def instructions(self) -> str:
        return _CODE_TEXT.format(
            pass_min=self.thresholds.pass_min, reject_below=self.thresholds.reject_below
        )

    def response_schema(self) -> dict[str, Any]:
        unit = {"type": "number", "minimum": 0, "maximum": 1}
        issue = _object(
            {
                "severity": {"type": "string", "enum": ["major", "minor"]},
                "description": {"type": "string"},
            }
        )
        return _object(
            {
                "verdict": {"type": "string", "enum": ["pass", "partial", "fail"]},
                "score": unit,
                "dimensions": _object({d: unit for d in self.dimensions}),
                "issues": {"type": "array", "items": issue},
                "summary": {"type": "string"},
                "improvements": _STRINGS,
                "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
            }
        )

    def weighted(self, scores: Mapping[str, float]) -> float:
        w = self.thresholds.weights
        return sum(w[d] * scores[d] for d in self.dimensions) / sum(w.values())

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer:
        raw = raw_scores(obj, self.dimensions, nested_keys=("dimensions", "scores"))
        scores = {d: to_unit_score(v, d) for d, v in raw.items()}
        issues = _issues(obj)
        confidence = _confidence(obj)
        extra: dict[str, Any] = {"issues": issues, "confidence": confidence}
        top = normalized(obj)
        computed = round(self.weighted(scores), 4)
        average = reconcile_average(top.get("score", top.get("average")), computed, extra)
        improvements = string_list(obj, "improvements", "suggestions")
        if not improvements:
            improvements = [i["description"] for i in issues if i["description"]]
        return RubricAnswer(
            scores=scores,
            average=average,
            reasoning=text_field(obj, "summary", "reasoning", "reason"),
            improvements=improvements,
            model_verdict=model_label(obj, "verdict"),
            extra=extra,
        )

    def decide(self, answer: RubricAnswer) -> Verdict:
        t = self.thresholds
        if t.low_confidence_escalates and answer.extra.get("confidence") == "low":
            return Verdict.ESCALATE
        values = [answer.scores[d] for d in self.dimensions]
        major = any(i.get("severity") == "major" for i in answer.extra.get("issues", []))
        if any(_exact(v) < _exact(t.reject_below) for v in values):
            return Verdict.REJECT
        correctness = _exact(answer.scores["correctness"])
        if major and correctness < _exact(t.major_issue_correctness_below):
            return Verdict.REJECT
        if all(_exact(v) >= _exact(t.pass_min) for v in values) and not major:
            return Verdict.ACCEPT
        return Verdict.IMPROVE

    def go_no_go(self, answer: RubricAnswer) -> GoNoGo:
        return go_no_go(answer.scores, self.thresholds.pass_min)


# --------------------------------------------------------------------------- completion


class CompletionThresholds(_Frozen):
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
every directive must be satisfied; when in doubt, do not pass. Set forward_progress to true \
when the change moves the task closer to done. Put questions only a human can answer in \
questions_for_user.

Reply with one JSON object and nothing else:
{"pass": true|false, "reason": "...", "missing_items": ["..."], "questions_for_user": \
["..."], "forward_progress": true|false, "convergence_estimate": n or null, \
"suggested_next_steps": ["..."]}"""


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
    prompt_version: str = "completion/1"
    dimensions: tuple[str, ...] = ()
    verdict_keys: frozenset[str] = frozenset(
        {"pass", "missing_items", "forward_progress", "verdict"}
    )

    def __init__(self, thresholds: CompletionThresholds | None = None) -> None:
        self.thresholds = thresholds or CompletionThresholds()

    def instructions(self) -> str:
        return _COMPLETION_TEXT

    def response_schema(self) -> dict[str, Any]:
        return _object(
            {
                "pass": {"type": "boolean"},
                "reason": {"type": "string"},
                "missing_items": _STRINGS,
                "questions_for_user": _STRINGS,
                "forward_progress": {"type": "boolean"},
                "convergence_estimate": {"type": ["number", "null"]},
                "suggested_next_steps": _STRINGS,
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
        missing = string_list(obj, "missing_items")
        next_steps = string_list(obj, "suggested_next_steps", "next_steps")
        extra: dict[str, Any] = {
            "pass": passed,
            "missing_items": missing,
            "questions_for_user": string_list(obj, "questions_for_user", "questions"),
            "forward_progress": progress,
            "convergence_estimate": convergence,
            "suggested_next_steps": next_steps,
        }
        return RubricAnswer(
            scores={},
            average=None,
            reasoning=text_field(obj, "reason", "reasoning", "summary"),
            improvements=missing + [s for s in next_steps if s not in missing],
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


Thresholds = ContentThresholds | CodeThresholds | CompletionThresholds


def get_rubric(name: RubricName | str, thresholds: Thresholds | None = None) -> Rubric:
    rubric_name = RubricName(name)
    if rubric_name is RubricName.CONTENT:
        if thresholds is not None and not isinstance(thresholds, ContentThresholds):
            raise TypeError("content rubric needs ContentThresholds")
        return ContentRubric(thresholds)
    if rubric_name is RubricName.CODE:
        if thresholds is not None and not isinstance(thresholds, CodeThresholds):
            raise TypeError("code rubric needs CodeThresholds")
        return CodeRubric(thresholds)
    if thresholds is not None and not isinstance(thresholds, CompletionThresholds):
        raise TypeError("completion rubric needs CompletionThresholds")
    return CompletionRubric(thresholds)
