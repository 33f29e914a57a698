"""What every rubric is: the `Rubric` interface, the parsed `RubricAnswer`, and the
small pieces the three rubrics share.

Thresholds are compared in exact decimal arithmetic (`exact`), because a boundary the
seeds state as "0.7" or "3.5" must hold for the number the model wrote, not for the
nearest binary float: 0.7 must pass a 0.7 bar, and (3, 3, 4) must stay under 3.5.

Every answer schema is bounded (`bounded_text`, `bounded_list`): no string without a
`maxLength`, no array without a `maxItems`. Under constrained decoding (llama.cpp,
Ollama, llama-cpp-python build a grammar from the schema) an unbounded list is a loop a
small model may never leave: one looped inside `improvements` until the output-token
limit. The bounds keep the longest answer of any rubric to a few hundred tokens (about
four characters a token), well under the default 1024, and each rubric's prompt asks for
the same. They bound what is asked only: the parsers still read a longer answer from a
server that does not enforce the schema, so records keep their shape.
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


TEXT_CHARS = 600
"""The longest reasoning, summary or reason asked for (about 150 tokens)."""
ITEM_CHARS = 160
"""The longest list item asked for: one sentence (about 40 tokens)."""
ITEMS_ASKED = 5
"""The most improvements (and other findings) a list is asked to hold."""


def bounded_text(max_chars: int = TEXT_CHARS) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_chars}


def bounded_list(
    max_items: int = ITEMS_ASKED, item: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An array of at most `max_items` items, one-sentence strings unless `item` says."""
    return {
        "type": "array",
        "items": item if item is not None else bounded_text(ITEM_CHARS),
        "maxItems": max_items,
    }


STRINGS_SCHEMA: dict[str, Any] = bounded_list()
"""A list of findings as every rubric asks for it (at most `ITEMS_ASKED` sentences)."""

LIST_ASK = f"at most {ITEMS_ASKED} items, each one sentence of at most {ITEM_CHARS} characters"
"""How the prompts ask for a list, in the schema's own bounds."""
TEXT_ASK = f"at most {TEXT_CHARS} characters"
