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

What a rubric reads beyond the scores is its own typed, frozen value (`Extras`: code's
issues and confidence, completion's flags and lists, research's unsupported claims), and
`RubricAnswer` and `Rubric` are generic over it, so mypy holds each rubric to reading its
own. The record keeps it as the plain dict `Extras.as_record` returns (`RoundRecord.extra`,
whose keys, their order and presence are the verdict schema's, read by tagging and by
judging's earlier verdicts), and `Rubric.read_extras` reads a stored one back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, overload

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from bot.judge.records import GoNoGo, RubricName, Verdict


class Extras(Protocol):
    """A rubric's own reading of a reply, beyond the scores every rubric shares."""

    def as_record(self) -> dict[str, Any]:
        """The extras as the verdict record keeps them (`RoundRecord.extra`)."""


def average_record(reported: float | str | None) -> dict[str, Any]:
    """The record's keys for a judge's own average that was off (`reported_average`, the
    number or the text it wrote, and `average_recomputed`); none when it agreed."""
    if reported is None:
        return {}
    return {"reported_average": reported, "average_recomputed": True}


def recorded_number(value: Any) -> float | None:
    """A number a stored record kept, read back; None for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def recorded_average(extra: Mapping[str, Any]) -> float | str | None:
    """`reported_average` of a stored record's extras, read back."""
    value = extra.get("reported_average")
    return value if isinstance(value, str) else recorded_number(value)


L = TypeVar("L", bound=str)


def one_of(label: str, labels: tuple[L, ...]) -> L | None:
    """`label` as one of `labels` (a `Literal`'s values), None when it is none of them."""
    return next((known for known in labels if known == label), None)


def recorded_strings(value: Any) -> tuple[str, ...]:
    """A list of findings a stored record kept, read back. A value that is not a list
    (never written by these rubrics) keeps its truth, which is all `decide` asks of it."""
    if isinstance(value, list | tuple):
        return tuple(v if isinstance(v, str) else str(v) for v in value)
    return (str(value),) if value else ()


@dataclass(frozen=True)
class ScoredExtras:
    """The extras of an answer with nothing of its own beyond its scores (content's): the
    average the judge reported when it was off from its scores or not a number; the
    computed average decides."""

    reported_average: float | str | None = None

    def as_record(self) -> dict[str, Any]:
        return average_record(self.reported_average)

    @classmethod
    def from_record(cls, extra: Mapping[str, Any]) -> ScoredExtras:
        return cls(recorded_average(extra))


E = TypeVar("E", bound=Extras, default=Any)
"""A rubric's extras; a bare `Rubric` is any rubric (the registry's, the engine's)."""
E_co = TypeVar("E_co", bound=Extras, covariant=True, default=Any)


@dataclass(frozen=True)
class RubricAnswer(Generic[E_co]):
    scores: dict[str, float]
    average: float | None
    reasoning: str
    improvements: list[str]
    model_verdict: str | None
    extras: E_co = field(default_factory=ScoredExtras)  # type: ignore[assignment]
    """The rubric's own reading; an answer built without one has content's (`ScoredExtras`)."""

    if TYPE_CHECKING:
        # The dataclass's own __init__ runs; these only tell mypy that an answer built
        # without extras holds `ScoredExtras`, so it cannot pass as another rubric's.
        @overload
        def __init__(
            self: RubricAnswer[ScoredExtras],
            scores: dict[str, float],
            average: float | None,
            reasoning: str,
            improvements: list[str],
            model_verdict: str | None,
        ) -> None: ...
        @overload
        def __init__(
            self,
            scores: dict[str, float],
            average: float | None,
            reasoning: str,
            improvements: list[str],
            model_verdict: str | None,
            extras: E_co,
        ) -> None: ...
        def __init__(
            self,
            scores: dict[str, float],
            average: float | None,
            reasoning: str,
            improvements: list[str],
            model_verdict: str | None,
            extras: Extras = ...,
        ) -> None: ...

    @property
    def extra(self) -> dict[str, Any]:
        """The extras as the round's record keeps them (`RoundRecord.extra`)."""
        return self.extras.as_record()


ContextKind = Literal["file", "diff", "ci"]
"""What a judge is shown of a change: the files, their diffs, the CI results."""


class Rubric(Protocol[E]):
    name: RubricName
    prompt_version: str
    dimensions: tuple[str, ...]
    context_order: tuple[ContextKind, ...]
    """What the judge keeps first when the prompt's budget is short (CI is trimmed first)."""
    low_score_below: float | None
    """The default accept bar: a dimension scored under it is a low score to tagging; None
    for a rubric without scores."""
    dimension_phrases: Mapping[str, tuple[str, ...]]
    """The phrases that name each of `dimensions` in a judge's reasoning, in base form
    (singular noun, bare verb; bot/judge/tagging/thesaurus.py), for the `dimension:` tags."""
    verdict_keys: frozenset[str]

    def instructions(self) -> str:
        """Rubric text for the system prompt."""

    def response_schema(self) -> dict[str, Any]:
        """JSON Schema of the reply, for providers with structured output."""

    def parse(self, obj: Mapping[str, Any]) -> RubricAnswer[E]:
        """Validate one extracted reply object; raises ParseError."""

    def read_extras(self, extra: Mapping[str, Any]) -> E:
        """The extras a stored round kept (`RoundRecord.extra`), read back leniently: a
        record is only what some version of `parse` wrote."""

    def decide(self, answer: RubricAnswer[E]) -> Verdict:
        """The verdict from the scores, never from the model's own label."""

    def go_no_go(self, answer: RubricAnswer[E]) -> GoNoGo:
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
