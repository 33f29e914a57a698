"""The content rubric (seed 000): KLS semantic/pragmatic/syntactic, whole scores 1-5.

It judges documents and other prose, the default for any path a repository does not
map to another rubric. Its GO label (every score >= `go_min`) comes from the phase A/B
pre-push hook and deliberately differs from its verdict: (3, 3, 3) is GO yet improve.
The verdict table is in bot/judge/rubrics/__init__.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field, model_validator

from bot.judge.records import GoNoGo, RubricName, Verdict
from bot.judge.rubrics.base import (
    LIST_ASK,
    STRINGS_SCHEMA,
    TEXT_ASK,
    ContextKind,
    E,
    FrozenModel,
    RubricAnswer,
    ScoredExtras,
    bounded_text,
    mean_at_least,
    object_schema,
    scores_go_no_go,
)
from bot.judge.rubrics.parsing import (
    model_label,
    normalized,
    raw_scores,
    reported_average,
    string_list,
    text_field,
    to_int_score,
)

CONTENT_DIMENSIONS = ("semantic", "pragmatic", "syntactic")
# fmt: off
# (one phrase per line would make the lists hard to read; they are data, not code)
CONTENT_PHRASES: Mapping[str, tuple[str, ...]] = {
    "semantic": (
        "semantic", "semantics", "factual", "factually", "factual correctness",
        "factual accuracy", "domain accuracy", "accuracy", "accurate", "inaccurate",
        "inaccuracy", "terminology", "domain terminology", "contradiction", "contradictory",
        "misrepresent", "domain knowledge", "accurately", "inaccurately",
    ),
    "pragmatic": (
        "pragmatic", "actionable", "actionability", "useful", "usefulness", "practical",
        "practicality", "utility", "helpful", "applicable", "relevance", "relevant",
        "task goal", "address the task", "enable decision", "intended decision",
        "intended action",
    ),
    "syntactic": (
        "syntactic", "internally consistent", "internal consistency", "well-structured",
        "well-organized", "well-organised", "structure", "structural", "format compliance",
        "format", "consistency", "consistent", "broken reference", "heading", "layout",
        "template",
    ),
}
# fmt: on
"""The words a judge's reasoning names each dimension by, in base form, for tagging
(bot/judge/tagging/thesaurus.py reads them from `Rubric.dimension_phrases`): the
KLS thesaurus of seeds 000 and 001 ("factual correctness", "domain accuracy" -> semantic;
"actionable", "useful", "practical" -> pragmatic; "internally consistent",
"well-structured" -> syntactic) and more."""


class ContentThresholds(FrozenModel):
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
    if all(v >= t.accept_min for v in values) and mean_at_least(values, t.accept_average):
        return Verdict.ACCEPT
    return Verdict.IMPROVE


def scored_schema(
    dimensions: tuple[str, ...], extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The answer of a rubric scoring each dimension 1-5 (content, research), plus `extra`
    properties of its own."""
    score = {"type": "integer", "minimum": 1, "maximum": 5}
    return object_schema(
        {
            "scores": object_schema({d: score for d in dimensions}),
            "average": {"type": "number"},
            "verdict": {"type": "string", "enum": ["accept", "improve", "reject"]},
            "reasoning": bounded_text(),
            **(extra or {}),
            "improvements": STRINGS_SCHEMA,
        }
    )


def scored_answer(
    obj: Mapping[str, Any],
    dimensions: tuple[str, ...],
    extras: Callable[[float | str | None], E],
) -> RubricAnswer[E]:
    """A 1-5 scored answer read leniently; `extras` makes the rubric's own extras from the
    average the judge reported when it was off (`reported_average`)."""
    raw = raw_scores(obj, dimensions)
    scores: dict[str, float] = {d: to_int_score(v, d, 1, 5) for d, v in raw.items()}
    top = normalized(obj)
    computed = round(sum(scores.values()) / len(scores), 2)
    reported = reported_average(top.get("average", top.get("avg")), computed)
    return RubricAnswer(
        scores=scores,
        average=computed,
        reasoning=text_field(obj, "reasoning", "reason", "findings", "summary"),
        improvements=string_list(obj, "improvements", "revision_suggestions"),
        model_verdict=model_label(obj, "verdict"),
        extras=extras(reported),
    )


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
List concrete improvements whenever a dimension is below 5: {list_ask}, the most \
important first. Keep the reasoning to {text_ask}.

Reply with one JSON object and nothing else:
{{"scores": {{"semantic": n, "pragmatic": n, "syntactic": n}}, "average": n, \
"verdict": "accept|improve|reject", "reasoning": "...", "improvements": ["..."]}}"""


class ContentRubric:
    name: RubricName = RubricName.CONTENT
    prompt_version: str = "content/2"
    dimensions: tuple[str, ...] = CONTENT_DIMENSIONS
    context_order: tuple[ContextKind, ...] = ("file", "diff", "ci")
    low_score_below: float | None = ContentThresholds().accept_min
    dimension_phrases: Mapping[str, tuple[str, ...]] = CONTENT_PHRASES
    verdict_keys: frozenset[str] = frozenset({"scores", "verdict", *CONTENT_DIMENSIONS})

    def __init__(self, thresholds: ContentThresholds | None = None) -> None:
        self.thresholds = thresholds or ContentThresholds()

    def instructions(self) -> str:
        return _CONTENT_TEXT.format(
            **self.thresholds.model_dump(), list_ask=LIST_ASK, text_ask=TEXT_ASK
        )

    def response_schema(self) -> dict[str, Any]:
        return scored_schema(self.dimensions)

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer[ScoredExtras]:
        return scored_answer(obj, self.dimensions, ScoredExtras)

    def read_extras(self, extra: Mapping[str, Any]) -> ScoredExtras:
        return ScoredExtras.from_record(extra)

    def decide(self, answer: RubricAnswer[ScoredExtras]) -> Verdict:
        return content_verdict(answer.scores, self.thresholds)

    def go_no_go(self, answer: RubricAnswer[ScoredExtras]) -> GoNoGo:
        return scores_go_no_go(answer.scores, self.thresholds.go_min)
