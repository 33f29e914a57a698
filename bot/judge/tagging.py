"""Rubric-term tagging: a verdict record's words mapped to a few stable tags, so triage and
the dashboard can ask "which changes had stubs?" without reading every reasoning.

Tags are `dimension:<name>` (a dimension of the record's rubric the judges discussed or scored
low), `problem:<kind>` (a problem the judges or the mechanical checks named) and a repository's
own (`TagTerms`, `tags:` in .github/judge.yml). The phrases, their word forms and how they
become one regex are bot/judge/tag_thesaurus.py; docs/tagging.md lists the tags.

The regex of a thesaurus (the built-in one, or it with one repository's terms) is compiled
once and cached. A problem or repository tag is not taken when one of the two words before
its phrase, in the same sentence, negates it ("no broken links", "doesn't add stubs"); a
dimension tag is, since a dimension discussed in the negative was still discussed. Tags come
from a fixed set, so the output is bounded whatever the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, RootModel

from bot.judge.records import RubricName, VerdictRecord
from bot.judge.tag_thesaurus import (
    ANSWER_LIST_TAGS,
    DIMENSION_PHRASES,
    FINDING_KIND_TAGS,
    INJECTION_TAG,
    LIST_WORDS,
    LOW_SCORE_BELOW,
    NEGATORS,
    NEUTRAL_PHRASES,
    NO_PROGRESS_TAG,
    PROBLEM_PHRASES,
    RUBRIC_DIMENSIONS,
    STRUCTURED_TAGS,
    Matcher,
    compile_phrases,
)

MAX_TAGS = 50
MAX_PHRASES_PER_TAG = 20
MAX_PHRASE_CHARS = 100
MAX_TAG_NAME_CHARS = 64
TAG_NAME_PATTERN = r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?::[a-z0-9]+(?:-[a-z0-9]+)*)?$"
DIMENSION_PREFIX = "dimension:"


def dimension_tag(dimension: str) -> str:
    """`scope_adherence` -> `dimension:scope-adherence`."""
    return DIMENSION_PREFIX + dimension.replace("_", "-")


DIMENSION_TAGS = frozenset(dimension_tag(d) for ds in RUBRIC_DIMENSIONS.values() for d in ds)
BUILTIN_TAGS: tuple[str, ...] = tuple(
    sorted(DIMENSION_TAGS | set(PROBLEM_PHRASES) | STRUCTURED_TAGS)
)

_TAG_NAME = re.compile(TAG_NAME_PATTERN)


def valid_tag_name(name: str) -> bool:
    """Whether `name` can be a tag (for `--tag` and filter arguments)."""
    return len(name) <= MAX_TAG_NAME_CHARS and _TAG_NAME.fullmatch(name) is not None


# The per-repository extension: `tags:` in .github/judge.yml


def _check_tag_name(name: str) -> str:
    if not valid_tag_name(name):
        shown = json.dumps(name if len(name) <= 70 else name[:67] + "...")
        raise ValueError(
            f"tag name {shown} must be lowercase words joined by hyphens, optionally after a "
            f"prefix and a colon (e.g. problem:missing-changelog), at most "
            f"{MAX_TAG_NAME_CHARS} characters"
        )
    if name.startswith(DIMENSION_PREFIX) and name not in DIMENSION_TAGS:
        raise ValueError(
            f"{name} is not a rubric dimension; dimension: tags are the rubrics' own "
            f"({', '.join(sorted(DIMENSION_TAGS))}); give a tag of your own another prefix"
        )
    return name


def _check_phrase(phrase: str) -> str:
    text = " ".join(phrase.split())
    if not text:
        raise ValueError("expected a phrase, got an empty string")
    if len(text) > MAX_PHRASE_CHARS:
        raise ValueError(
            f"a phrase has at most {MAX_PHRASE_CHARS} characters, this one {len(text)}"
        )
    if not any(c.isalnum() for c in text):
        raise ValueError(f"phrase {json.dumps(text)} has no letter or digit to match")
    return text


def _check_phrase_count(phrases: tuple[str, ...]) -> tuple[str, ...]:
    if not 1 <= len(phrases) <= MAX_PHRASES_PER_TAG:
        raise ValueError(f"expected 1 to {MAX_PHRASES_PER_TAG} phrases per tag, got {len(phrases)}")
    return phrases


def _check_tag_count(tags: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    if len(tags) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, got {len(tags)}")
    return tags


def _tag_terms_schema(schema: dict[str, Any]) -> None:
    # The checks are our own validators (for messages a repository owner can act on), so
    # pydantic cannot derive their bounds; the schema states them for editors.
    schema.update(
        type="object",
        maxProperties=MAX_TAGS,
        propertyNames={"pattern": TAG_NAME_PATTERN, "maxLength": MAX_TAG_NAME_CHARS},
        additionalProperties={
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_PHRASES_PER_TAG,
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_PHRASE_CHARS},
        },
    )


TagName = Annotated[str, AfterValidator(_check_tag_name)]
Phrase = Annotated[str, AfterValidator(_check_phrase)]
Phrases = Annotated[tuple[Phrase, ...], AfterValidator(_check_phrase_count)]


class TagTerms(RootModel[dict[TagName, Phrases]]):
    """A repository's tags: tag name -> phrases. A built-in tag's name adds its phrases to
    the built-in ones; any other name is a new tag."""

    model_config = ConfigDict(frozen=True, json_schema_extra=_tag_terms_schema)

    root: Annotated[dict[TagName, Phrases], AfterValidator(_check_tag_count)] = Field(
        default_factory=dict
    )


# Matching

_WORD = re.compile(r"[\w'\u2019]+")
_NEGATION_WINDOW = 40


TermsKey = tuple[tuple[str, tuple[str, ...]], ...]


@lru_cache(maxsize=64)
def _matcher(extension: TermsKey) -> Matcher:
    terms: dict[str, list[str]] = {dimension_tag(d): list(p) for d, p in DIMENSION_PHRASES.items()}
    for tag, phrases in PROBLEM_PHRASES.items():
        terms[tag] = list(phrases)
    for tag, phrases in extension:
        terms.setdefault(tag, []).extend(phrases)
    return compile_phrases(terms, NEUTRAL_PHRASES)


def _negated(text: str, start: int) -> bool:
    before = text[max(0, start - _NEGATION_WINDOW) : start]
    clause = before[max(before.rfind(c) for c in ".!?;:\n") + 1 :]
    words = [w for w in map(str.lower, _WORD.findall(clause)) if w not in LIST_WORDS][-2:]
    return any(w in NEGATORS or w.endswith(("n't", "n\u2019t")) for w in words)


def _scan(matcher: Matcher, text: str, found: set[str]) -> None:
    pattern, group_tags = matcher
    for match in pattern.finditer(text):
        tags = group_tags[match.lastindex or 0]
        if tags <= found:
            continue
        found |= tags & DIMENSION_TAGS
        rest = tags - DIMENSION_TAGS
        if rest and not _negated(text, match.start()):
            found |= rest


def _matcher_for(extra: TagTerms | None) -> Matcher:
    return _matcher(tuple(sorted(extra.root.items())) if extra is not None else ())


def text_tags(text: str, extra: TagTerms | None = None) -> frozenset[str]:
    """The tags one text's phrases carry (every dimension's, whatever the rubric)."""
    found: set[str] = set()
    _scan(_matcher_for(extra), text, found)
    return frozenset(found)


# A record's tags

_MAX_ANSWER_DEPTH = 4


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string in a round's structured answer (issues, missing items, questions...)."""
    if isinstance(value, str):
        yield value
    elif depth < _MAX_ANSWER_DEPTH and isinstance(value, Mapping | list | tuple):
        for item in value.values() if isinstance(value, Mapping) else value:
            yield from _strings(item, depth + 1)


def _texts(record: VerdictRecord) -> dict[str, None]:
    # a dict keeps order and drops repeats: the headline repeats the last round's words
    texts = dict.fromkeys([record.reasoning, *record.improvements])
    for round_ in record.previous_rounds:
        texts.update(dict.fromkeys([round_.reasoning, *round_.improvements]))
        texts.update(dict.fromkeys(_strings(round_.extra)))
    return texts


def _low_scores(rubric: RubricName, scores: Mapping[str, float]) -> set[str]:
    bar, dimensions = LOW_SCORE_BELOW.get(rubric, 0), RUBRIC_DIMENSIONS[rubric]
    return {dimension_tag(d) for d, v in scores.items() if d in dimensions and v < bar}


def _answer_tags(extra: Mapping[str, Any]) -> set[str]:
    tags = {tag for key, tag in ANSWER_LIST_TAGS.items() if extra.get(key)}
    if extra.get("forward_progress") is False:
        tags.add(NO_PROGRESS_TAG)
    return tags


def tags_for(record: VerdictRecord, extra: TagTerms | None = None) -> tuple[str, ...]:
    """The record's tags, sorted, each once.

    From the words of the headline and of every round (reasoning, improvements, and the
    strings of the structured answer: issues, missing items, unsupported claims...), matched
    against the built-in thesaurus plus `extra`; dimension tags only for the record's own
    rubric's dimensions. Also without any phrase: `dimension:<name>` for every dimension a
    round scored low (under 3 on the 1-5 scales, under 0.7 on code's 0.0-1.0 scale), the
    problem of each mechanical finding's kind, `problem:prompt-injection` for injection
    findings, and the problems a structured answer states (unsupported claims, missing items,
    no forward progress).
    """
    matcher, found = _matcher_for(extra), set[str]()
    for text in _texts(record):
        _scan(matcher, text, found)
    own = {dimension_tag(d) for d in RUBRIC_DIMENSIONS[record.rubric]}
    found = {t for t in found if t in own or t not in DIMENSION_TAGS}
    found |= _low_scores(record.rubric, record.scores)
    for round_ in record.previous_rounds:
        found |= _low_scores(record.rubric, round_.scores) | _answer_tags(round_.extra)
    found |= {
        FINDING_KIND_TAGS[f.kind] for f in record.mechanical_findings if f.kind in FINDING_KIND_TAGS
    }
    if record.injection_findings:
        found.add(INJECTION_TAG)
    return tuple(sorted(found))
