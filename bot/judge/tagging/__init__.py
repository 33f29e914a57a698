"""Rubric-term tagging: a verdict record's words mapped to a few stable tags, so triage and
the dashboard can ask "which changes had stubs?" without reading every reasoning.

Tags are `dimension:<name>` (a dimension of the record's rubric the judges discussed or scored
low), `problem:<kind>` (a problem the judges or the mechanical checks named) and a repository's
own (`TagTerms`, `tags:` in .github/judge.yml); docs/tagging.md lists the tags.

    __init__   a record's tags, and a repository's terms matched by the same rules
    thesaurus  the built-in phrases, their word forms and how they become one regex

The built-in thesaurus' regex is compiled once. With a repository's terms, the thesaurus is
matched by the same rules by walking its word trie in Python instead (`_TextScan`), since
compiling a thousand phrases takes seconds. A problem or repository tag is not taken when one
of the two words before its phrase, in the same sentence, negates it ("no broken links",
"doesn't add stubs"); a dimension tag is, since a dimension discussed in the negative was
still discussed. Tags come from a fixed set, so the output is bounded whatever the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache, lru_cache, partial
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, RootModel

from bot.judge.records import RubricName, VerdictRecord
from bot.judge.tagging.thesaurus import (
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
    SEPARATOR,
    Matcher,
    PhraseTrie,
    compile_phrases,
    phrase_trie,
    word_forms,
    word_order,
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
PhraseHit = tuple[int, frozenset[str]]
"""Where a phrase starts in a text, and its tags (none for a neutral phrase)."""


def _builtin_terms() -> dict[str, list[str]]:
    terms: dict[str, list[str]] = {dimension_tag(d): list(p) for d, p in DIMENSION_PHRASES.items()}
    for tag, phrases in PROBLEM_PHRASES.items():
        terms[tag] = list(phrases)
    return terms


@cache
def _builtin_matcher() -> Matcher:
    return compile_phrases(_builtin_terms(), NEUTRAL_PHRASES)


def _regex_hits(matcher: Matcher, text: str, start: int = 0) -> Iterator[PhraseHit]:
    pattern, group_tags = matcher
    for match in pattern.finditer(text, start):
        yield match.start(), group_tags[match.lastindex or 0]


# A repository's terms are not compiled: the regex of a thousand phrases takes seconds to
# compile, on the event loop, for every edit of the file. Walking the word trie in Python,
# in the regex's order, gives its matches; building the index is linear in the phrases.
#
# The walk, like the regex, may try many phrases at one position when they overlap (a
# thousand phrases of "a" and "aa" in different orders all fit a run of a's), and Python
# tries them a hundred times slower than the regex engine. So a text gets a number of steps
# (a trie node tried, a form looked up) in proportion to its length: four a character, where
# prose takes under one and a list of phrases one and a half. Past them, only the built-in
# phrases are read, by their regex.
_STEPS_PER_CHARACTER = 4
_STEPS_AT_LEAST = 10_000

_PHRASE_START = re.compile(r"(?<!\w)[^\s_-]")
_SEPARATOR_RUN = re.compile(SEPARATOR)
# Lowercase letters the regex engine takes for one another (the same simple uppercase) that
# the round trip through str.upper misses, their uppercase being two or three letters.
_SAME_UPPERCASE = {"\u1fd3": "\u0390", "\u1fe3": "\u03b0", "\ufb06": "\ufb05"}


def _folded_char(char: str) -> str:
    """`char` as the regex engine compares it ignoring case: its simple lowercase (a capital I
    with a dot lowers to "i" and a combining dot; the engine takes the "i"), and one letter for
    those with the same uppercase (long s and "s", dotless i and "i", final and medial sigma)."""
    lower = char.lower()[0]
    upper = lower.upper()
    if len(upper) == 1 and len(upper.lower()) == 1:
        lower = upper.lower()
    return _SAME_UPPERCASE.get(lower, lower)


def _folded(text: str) -> str:
    """`text`, character by character folded: the same length, so positions carry over."""
    if text.isascii():
        return text.lower()
    return text.translate({ord(c): f for c in set(text) if (f := _folded_char(c)) != c})


def _word_char_at(text: str, at: int) -> bool:
    # the regex's \w
    return at < len(text) and (text[at].isalnum() or text[at] == "_")


def _words_by_form(node: PhraseTrie) -> dict[str, tuple[str, ...]]:
    """`node`'s next words by the forms they match, folded; a form's shorter prefixes map to
    no word, so a lookup that misses tells a walk along the text to stop."""
    words_of: dict[str, tuple[str, ...]] = {}
    for word in node.next:
        for form in map(_folded, word_forms(word)):
            for length in range(1, len(form)):
                words_of.setdefault(form[:length], ())
            if word not in words_of.get(form, ()):
                words_of[form] = (*words_of.get(form, ()), word)
    return words_of


class _PhraseIndex:
    """A word trie, matched as compile_phrases' regex matches it (`_TextScan`).

    A node's forms are worked out when a text first reaches it, so building costs little more
    than the trie, and a repository's phrases that never match cost no memory beyond it."""

    def __init__(self, trie: PhraseTrie) -> None:
        self.trie = trie
        self._words_by_form = {trie: _words_by_form(trie)}
        self.first_letters = frozenset(form[0] for form in self._words_by_form[trie])

    def words_by_form(self, node: PhraseTrie) -> dict[str, tuple[str, ...]]:
        known = self._words_by_form.get(node)
        if known is None:
            known = self._words_by_form[node] = _words_by_form(node)
        return known


class _OutOfSteps(Exception):
    pass


class _TextScan:
    """One text's phrases: at each position where a word may start, the first phrase in the
    regex's backtracking order (a node's words by `word_order`, each word's forms longest
    first, a longer phrase before the end of this one, the end not followed by a word
    character)."""

    def __init__(self, index: _PhraseIndex, text: str) -> None:
        self.index, self.text, self.folded = index, text, _folded(text)
        self.steps_left = _STEPS_PER_CHARACTER * len(text) + _STEPS_AT_LEAST

    def hits(self) -> tuple[list[PhraseHit], int]:
        """The hits, and where the scan stopped: the end of the text, or the position it was
        trying when its steps ran out."""
        found: list[PhraseHit] = []
        for start in _PHRASE_START.finditer(self.text):
            at = start.start()
            if self.folded[at] in self.index.first_letters:
                try:
                    tags = self._first_phrase(self.index.trie, 2, at)
                except _OutOfSteps:
                    return found, at
                if tags is not None:
                    found.append((at, tags))
        return found, len(self.text)

    def _first_phrase(self, node: PhraseTrie, prefix: int, at: int) -> frozenset[str] | None:
        for word, end in self._words_at(node, prefix, at):
            child = node.next[word]
            if child.next:
                after = _SEPARATOR_RUN.match(self.text, end)
                assert after is not None  # a run of none matches anywhere
                tags = self._first_phrase(child, 1, after.end())
                if tags is not None:
                    return tags
            if child.tags is not None and not _word_char_at(self.text, end):
                return frozenset(child.tags)
        return None

    def _words_at(self, node: PhraseTrie, prefix: int, at: int) -> list[tuple[str, int]]:
        """`node`'s words with a form at `at`, each with where that form ends, in the order
        the regex tries them."""
        words_of, found = self.index.words_by_form(node), list[tuple[str, int]]()
        # forms hold no separator, so the walk stops at the next one
        for end in range(at + 1, len(self.folded) + 1):
            words = words_of.get(self.folded[at:end])
            if words is None:
                break
            self.steps_left -= 1
            found.extend((word, end) for word in words)
        self.steps_left -= 1
        if self.steps_left < 0:
            raise _OutOfSteps
        if len(found) > 1:
            found.sort(key=lambda hit: (word_order(hit[0], prefix), -hit[1]))
        return found


def _repository_hits(index: _PhraseIndex, text: str) -> Iterator[PhraseHit]:
    hits, stopped = _TextScan(index, text).hits()
    yield from hits
    # where the walk ran out of steps, the built-in phrases still count
    yield from _regex_hits(_builtin_matcher(), text, stopped)


@lru_cache(maxsize=8)
def _phrase_index(extension: TermsKey) -> _PhraseIndex:
    terms = _builtin_terms()
    for tag, phrases in extension:
        terms.setdefault(tag, []).extend(phrases)
    return _PhraseIndex(phrase_trie(terms, NEUTRAL_PHRASES))


def _phrase_finder(extra: TagTerms | None) -> Callable[[str], Iterator[PhraseHit]]:
    if extra is None or not extra.root:
        return partial(_regex_hits, _builtin_matcher())
    return partial(_repository_hits, _phrase_index(tuple(sorted(extra.root.items()))))


def _negated(text: str, start: int) -> bool:
    before = text[max(0, start - _NEGATION_WINDOW) : start]
    clause = before[max(before.rfind(c) for c in ".!?;:\n") + 1 :]
    words = [w for w in map(str.lower, _WORD.findall(clause)) if w not in LIST_WORDS][-2:]
    return any(w in NEGATORS or w.endswith(("n't", "n\u2019t")) for w in words)


def _scan(hits: Iterable[PhraseHit], text: str, found: set[str]) -> None:
    for start, tags in hits:
        if tags <= found:
            continue
        found |= tags & DIMENSION_TAGS
        rest = tags - DIMENSION_TAGS
        if rest and not _negated(text, start):
            found |= rest


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
    phrases_in, found = _phrase_finder(extra), set[str]()
    for text in _texts(record):
        _scan(phrases_in(text), text, found)
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
