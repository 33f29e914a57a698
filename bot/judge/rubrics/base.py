"""What every rubric is: the `Rubric` interface, the parsed `RubricAnswer`, and the
small pieces the three rubrics share.

Thresholds are compared in exact decimal arithmetic (`exact`), because a boundary the
seeds state as "0.7" or "3.5" must hold for the number the model wrote, not for the
nearest binary float: 0.7 must pass a 0.7 bar, and (3, 3, 4) must stay under 3.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from bot.judge.records import GoNoGo, RubricName, Verdict


@dataclass(frozen=True)
class RubricAnswer:
    scores: dict[str, float]
    average: float | None
    reasoning: str
    improvements: list[str]
    model_verdict: str | None
    extra: dict[str, Any] = field(default_factory=dict)


ContextKind = Literal["file", "diff", "ci"]
"""What a judge is shown of a change: the files, their diffs, the CI results."""


class Rubric(Protocol):
    name: RubricName
    prompt_version: str
    dimensions: tuple[str, ...]
    context_order: tuple[ContextKind, ...]
    """What the judge keeps first when the prompt's budget is short (CI is trimmed first)."""
    low_score_below: float | None
    """The default accept bar: a dimension scored under it is a low score to tagging; None
    for a rubric without scores."""
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
        """The phase A/B label when this answer is the deciding judgment; the whole rule
        (overrides, rejects, nobody answered) is `bot.judge.engine.judgment.go_no_go`."""


class FrozenModel(BaseModel):
    """Base of the threshold settings: immutable, and a misspelt key is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def exact(value: float) -> Fraction:
    # via str so 0.7 means 7/10, as the model wrote it, not the nearest binary float
    return Fraction(str(value))


def mean_at_least(values: Iterable[float], threshold: float) -> bool:
    vals = [exact(v) for v in values]
    return sum(vals, Fraction(0)) >= exact(threshold) * len(vals)


def scores_go_no_go(scores: Mapping[str, float], minimum: float = 3) -> GoNoGo:
    """Phase A/B label: GO when every score >= minimum; no scores is UNDETERMINED."""
    if not scores:
        return "UNDETERMINED"
    return "GO" if all(v >= minimum for v in scores.values()) else "NO-GO"


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema object that requires every listed property and nothing else."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


STRINGS_SCHEMA: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
