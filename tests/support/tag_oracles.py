"""Tagging shorthands the tests check against: every built-in tag, and one text's tags.

Production tags whole records (`tags_for`); `text_tags` runs its per-text step on one text.
"""

from __future__ import annotations

from bot.judge import tagging
from bot.judge.tagging import DIMENSION_TAGS, TagTerms
from bot.judge.tagging.thesaurus import PROBLEM_PHRASES, STRUCTURED_TAGS

BUILTIN_TAGS: tuple[str, ...] = tuple(
    sorted(DIMENSION_TAGS | set(PROBLEM_PHRASES) | STRUCTURED_TAGS)
)


def text_tags(text: str, extra: TagTerms | None = None) -> frozenset[str]:
    """The tags one text's phrases carry (every dimension's, whatever the rubric)."""
    found: set[str] = set()
    tagging._scan(tagging._phrase_finder(extra)(text), text, found)
    return frozenset(found)
