"""A repository's `tags:` built to be slow to match: before, its phrases and the built-in ones
became one regex, compiled on the App's event loop for every new version of the file (a
64 KB judge.yml of 600 phrases of random words took seconds, stalling every installation);
now they are walked in a word trie, built in milliseconds, with a bounded number of steps a
character of text."""

from __future__ import annotations

import random
import string
from collections.abc import Callable

import yaml

from bot.judge.records import RubricName, VerdictRecord
from bot.judge.tagging import MAX_PHRASE_CHARS, MAX_PHRASES_PER_TAG, TagTerms, tags_for
from tests.support.hostile_runner import assert_each_finishes
from tests.support.verdict_builders import make_record

KB = 1000
FILE_LIMIT = 64 * 1024  # what the App reads of .github/judge.yml


def random_word_terms(seed: int, tags: int = 30) -> TagTerms:
    """`tags` tags of 20 phrases of 20 random four-letter words: the most a 64 KiB file holds."""
    letters = "".join(random.Random(seed).choices(string.ascii_lowercase, k=tags * 20 * 20 * 4))
    words = [letters[at : at + 4] for at in range(0, len(letters), 4)]
    phrases = [" ".join(words[at : at + 20]) for at in range(0, len(words), 20)]
    return TagTerms.model_validate(
        {f"team:t{t}": phrases[t * 20 : (t + 1) * 20] for t in range(tags)}
    )


def overlapping_terms(seed: int, tags: int = 34) -> TagTerms:
    """Phrases of "a" and "aa" in different orders, each ending in "b": a run of a's fits
    thousands of them up to their last word. As many as a 64 KiB file holds."""
    rng = random.Random(seed)

    def phrase() -> str:
        return " ".join(rng.choice(["a", "aa"]) for _ in range(33)) + " b"

    return TagTerms.model_validate(
        {f"team:t{t}": [phrase() for _ in range(MAX_PHRASES_PER_TAG)] for t in range(tags)}
    )


SENTENCE = (
    "The handler is still a stub and the retry logic is untested; the summary makes an "
    "unsupported claim about latency, and the parser hard-codes the expected value. "
)


def reasoning(terms: TagTerms, size: int) -> str:
    """Judge-like prose with the repository's phrases in it, `size` characters."""
    rng = random.Random(size)
    phrases = [p for ps in terms.root.values() for p in ps]
    parts, length = list[str](), 0
    while length < size:
        parts += [SENTENCE, rng.choice(phrases), ". "]
        length += len(SENTENCE) + len(parts[-2]) + 2
    return "".join(parts)[:size]


def record(text: str) -> VerdictRecord:
    return make_record(rubric=RubricName.CODE, reasoning=text, improvements=[], previous_rounds=[])


def tag_with_configs(seeds: range, size: int) -> None:
    for seed in seeds:
        terms = random_word_terms(seed)
        tags_for(record(reasoning(terms, size)), terms)


def yaml_size(terms: TagTerms) -> int:
    return len(yaml.safe_dump({"tags": {t: list(ps) for t, ps in terms.root.items()}}).encode())


def test_the_hostile_configs_fit_the_file_limit_and_the_phrase_limit() -> None:
    for terms in (random_word_terms(0), overlapping_terms(0)):
        assert 60 * 1024 < yaml_size(terms) <= FILE_LIMIT
        assert max(len(p) for ps in terms.root.values() for p in ps) <= MAX_PHRASE_CHARS


def test_the_hostile_configs_still_tag_their_phrases() -> None:
    terms = random_word_terms(0)
    phrase = terms.root["team:t7"][3]
    tags = tags_for(record(f"{SENTENCE}It {phrase.upper()}, twice: {phrase}."), terms)
    assert set(tags) == {
        "team:t7",
        "dimension:completeness",
        "problem:stub",
        "problem:missing-tests",
        "problem:unsupported-claim",
        "problem:hard-coded-result",
    }
    overlapping = overlapping_terms(0)
    assert "team:t3" in tags_for(record(overlapping.root["team:t3"][0]), overlapping)
    assert tags_for(record("a" * 70 + " b"), overlapping) == ()  # no phrase has 70 a's


# Before, each config compiled a regex for seconds (three on an idle machine, six under load)
# before reading a word: the first entry took minutes. Now each takes a fraction of a second.
HOSTILE: dict[str, Callable[[], object]] = {
    "forty 64 KB configs, 3 KB of reasoning each": lambda: tag_with_configs(range(40), 3 * KB),
    # another seed: each config compiled once, before, and then cached
    "a 64 KB config, 100 KB of reasoning": lambda: tag_with_configs(range(40, 41), 100 * KB),
    "a 64 KB config of overlapping phrases, 100 KB of a's": lambda: tags_for(
        record(("a" * 50 + " ") * (100 * KB // 51)), overlapping_terms(0)
    ),
}


def test_hostile_tag_configs_are_read_in_time() -> None:
    assert_each_finishes("tests.judge.test_tags_hostile", "HOSTILE")
