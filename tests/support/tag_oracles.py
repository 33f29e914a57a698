"""Tagging shorthands the tests check against: every built-in tag, and one text's tags.

Production tags whole records (`tags_for`); `text_tags` runs its per-text step on one text.
"""

from __future__ import annotations

from bot.judge import tagging
from bot.judge.tagging import DIMENSION_TAGS, TagTerms
from bot.judge.tagging.thesaurus import (
    ANSWER_LIST_TAGS,
    FINDING_KIND_TAGS,
    INJECTION_TAG,
    NO_PROGRESS_TAG,
    PROBLEM_PHRASES,
)

# The tags a record's structure gives, phrases or not (findings, structured answers).
STRUCTURED_TAGS = frozenset(
    {*FINDING_KIND_TAGS.values(), *ANSWER_LIST_TAGS.values(), INJECTION_TAG, NO_PROGRESS_TAG}
)
BUILTIN_TAGS: tuple[str, ...] = tuple(
    sorted(DIMENSION_TAGS | set(PROBLEM_PHRASES) | STRUCTURED_TAGS)
)


def text_tags(text: str, extra: TagTerms | None = None) -> frozenset[str]:
    """The tags one text's phrases carry (every dimension's, whatever the rubric)."""
    found: set[str] = set()
    tagging._scan(tagging._phrase_finder(extra)(text), text, found)
    return frozenset(found)
