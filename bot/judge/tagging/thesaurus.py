"""The built-in thesaurus of rubric-term tagging: phrases that name each rubric dimension and
each recurring problem kind, and the tag each kind of mechanical finding carries.

Seeds 000 and 001 normalise the judges' reasoning against a knowledge-graph thesaurus (one
file per KLS dimension: "factual correctness", "domain accuracy" -> semantic; "actionable",
"useful", "practical" -> pragmatic; "internally consistent", "well-structured" ->
syntactic). Each rubric declares the phrases of its own dimensions beside them
(`Rubric.dimension_phrases`: content's start from those terms, code's and research's are
their seeds' criteria) and this module gathers them, so a new rubric brings its own. The
problem kinds are
the ones the rubrics' prompts tell the judges to look for (stubs, placeholders, scope creep,
tests written to pass, hallucinated APIs, requirement drift, unsupported claims, ...) and the
mechanical checks' finding kinds.

Phrases are written in their base form (singular noun, bare verb). `compile_phrases` makes one
regex of a thesaurus: case-insensitive, whole words only ("stub" is not in "stubborn"), each
word also in the forms `word_forms` gives (plural, -ed, -ing), any run of spaces, hyphens and
underscores, or none, between words ("hard-code value" also reads "hardcoded values"), and
at one position the longest phrase first, so a longer neutral phrase ("regression test") hides
a shorter problem phrase ("regression"). The phrases are escaped literals in a word trie
(`phrase_trie`) behind lookaheads on their first letters, so a scan is linear in the text with
a small constant, and nothing in it can backtrack catastrophically.

Only the built-in thesaurus, fixed, is compiled: compiling is slow (seconds for the thousands of
phrases a repository may add), so a repository's phrases are matched by walking the same trie
in Python (bot/judge/tagging/__init__.py), trying its words in the regex's order (`word_order`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import groupby

from bot.judge.records import RubricName
from bot.judge.rubrics import get_rubric

RUBRIC_DIMENSIONS: Mapping[RubricName, tuple[str, ...]] = {
    name: get_rubric(name).dimensions for name in RubricName
}
# A low score is one under the rubric's default accept bar (`Rubric.low_score_below`): 3 on
# the 1-5 scales, 0.7 on code's 0.0-1.0 scale. The completion rubric has no scores.
LOW_SCORE_BELOW: Mapping[RubricName, float] = {
    name: bar for name in RubricName if (bar := get_rubric(name).low_score_below) is not None
}

LIST_WORDS = frozenset({"or", "and", "any"})
"""Skipped when looking for a negator: "no stubs or placeholders", "not any stub"."""

_VOWELS = frozenset("aeiou")
_SHORT_SYLLABLE = re.compile(r"(?:^|[^aeiou])[aeiou][b-df-hj-np-rtvz]$")

DIMENSION_PHRASES: Mapping[str, tuple[str, ...]] = {
    dimension: phrases
    for name in RubricName
    for dimension, phrases in get_rubric(name).dimension_phrases.items()
}
"""Each rubric's phrases for its dimensions (`Rubric.dimension_phrases`), rubric by rubric."""

# fmt: off
# (one phrase per line would make the lists hard to read; they are data, not code)
FUNCTION_WORDS = frozenset({
    # never inflected: "not" must not also match "noted"
    "the", "and", "for", "nor", "with", "without", "not", "are", "was", "were", "its", "from",
    "than", "that", "this", "what", "off", "out", "too", "only", "does", "did", "has", "have",
    "had", "any", "all",
})
NEGATORS = frozenset({
    "no", "not", "without", "never", "none", "nor", "neither", "zero", "cannot",
})

PROBLEM_PHRASES: Mapping[str, tuple[str, ...]] = {
    "problem:missing-citation": (
        "missing citation", "no citation", "uncited", "without citation", "without a citation",
        "lack citation", "need a citation", "citation needed", "add a citation",
        "add citation", "missing source", "no source", "unsourced", "without a source",
        "cite no source", "too few source", "insufficient source",
    ),
    "problem:unsupported-claim": (
        "unsupported claim", "unsupported assertion", "unsupported statement",
        "unsubstantiated", "unverified claim", "unverifiable", "claim without evidence",
        "no evidence", "lack evidence", "without evidence", "not supported by",
        "not backed by", "evidence does not support", "speculative claim",
    ),
    "problem:stub": (
        "stub", "not implemented", "unimplemented", "not yet implemented",
        "NotImplementedError", "empty implementation", "dummy implementation",
        "skeleton implementation", "no-op implementation", "empty function body",
    ),
    "problem:placeholder": (
        "placeholder", "TODO", "FIXME", "TBD", "lorem ipsum", "fill in later",
        "to be written", "coming soon", "unfinished marker", "mock data", "dummy data",
        "dummy value",
    ),
    "problem:scope-creep": (
        "scope creep", "out of scope", "outside the scope", "beyond the scope",
        "unrelated change", "unrelated edit", "unrelated modification", "unrelated refactor",
        "gold-plate", "unrequested", "not requested", "not asked for", "drive-by change",
        "drive-by refactor", "beyond what was asked",
    ),
    "problem:missing-tests": (
        "missing test", "no tests", "no new tests", "no unit tests", "untested", "not tested",
        "lack test", "lack of test",
        "without test", "add test", "add a test", "need test", "tests are missing",
        "missing test coverage", "insufficient test coverage", "low test coverage",
        "no test coverage",
    ),
    "problem:test-gaming": (
        "written to pass", "tautological test", "tautological assertion", "always pass",
        "test the mock", "trivial assertion", "weaken the test", "disable test",
        "skip the test", "assert true", "asserts nothing", "no assertion",
    ),
    "problem:broken-link": (
        "broken link", "dead link", "link rot", "broken anchor", "broken reference",
        "dangling reference", "dangling link", "missing link target",
        "link target is missing", "unresolved link", "invalid link", "404",
    ),
    "problem:hard-coded-result": (
        "hard-code result", "hard-code value", "hard-code output", "hard-code return value",
        "hard-code answer", "hard-code response", "hard-code expected", "hard-code the result",
        "hard-code the expected", "canned response", "canned result", "fake result",
        "return a constant", "special-case the test", "tailored to the test",
    ),
    # Secrets in prose are often fine ("the API key rotation doc"); these say one is exposed.
    # The mechanical secret check tags a committed one whatever the judges wrote.
    "problem:secret": (
        *(
            f"{how} {what}"
            for how in ("hard-code", "commit", "leak", "expose", "plaintext", "plain-text")
            for what in ("secret", "password", "credential", "api key", "token", "private key")
        ),
        "secret is committed", "token is committed", "key is committed",
        "password is committed", "credential is committed", "secret in the repository",
        "secret in the code", "secret in source control",
    ),
    "problem:regression": (
        "regression", "regress", "break existing", "broke existing", "previously passing",
        "used to work", "no longer work", "backwards incompatible", "backward incompatible",
        "breaking change",
    ),
    "problem:incomplete": (
        "incomplete", "partial implementation", "partially implemented", "half-done",
        "unfinished", "not finished", "not complete", "only partially",
        "partial completion", "missing edge case", "missing item", "missing section",
        "missing step", "still missing", "remaining work",
    ),
    "problem:off-topic": (
        "off-topic", "irrelevant", "not relevant", "unrelated to the task",
        "does not address the task", "doesn't address the task", "miss the point",
        "wrong task", "not what was asked", "tangential",
    ),
    "problem:requirement-drift": (
        "requirement drift", "feedback not incorporated", "ignore feedback",
        "ignore the feedback", "ignore the directive", "violate the directive",
        "directive not followed", "contrary to the directive", "ignore the acceptance criteria",
        "acceptance criteria not met", "does not meet the acceptance criteria",
        "deviate from the requirement", "deviate from the spec",
    ),
    "problem:hallucination": (
        "hallucinate", "hallucination", "non-existent api", "non-existent function",
        "non-existent method", "non-existent module", "non-existent package", "made-up api",
        "made-up function", "made-up source", "made-up citation", "made-up statistic",
        "fabricate", "invent api", "invented api",
    ),
    "problem:contradiction": (
        "contradiction", "contradict", "contradictory", "self-contradictory",
        "inconsistent with", "inconsistency between", "conflicting statement",
    ),
    "problem:factual-error": (
        "factual error", "factually incorrect", "factually wrong", "inaccurate", "inaccuracy",
        "incorrect claim", "incorrect statement", "misstate", "misattribute",
        "outdated information", "out-of-date information",
    ),
    "problem:broken-code": (
        "syntax error", "type error", "compile error", "compilation error",
        "does not compile", "fail to compile", "won't compile", "import error",
        "unresolved import", "missing import", "missing dependency", "undefined variable",
        "undefined name", "name error", "attribute error", "runtime error", "crash",
    ),
    "problem:invalid-format": (
        "invalid json", "invalid yaml", "invalid toml", "invalid markdown", "malformed",
        "parse error", "fail to parse", "does not parse", "unparseable", "unparsable",
    ),
    "problem:merge-conflict": ("merge conflict", "conflict marker", "unresolved conflict"),
    "problem:empty-file": (
        "empty file", "file is empty", "blank file", "empty document", "empty page",
    ),
    "problem:prompt-injection": (
        "prompt injection", "injection attempt", "injected instruction",
        "instruction to the judge", "addressed to the judge", "manipulate the judge",
        "jailbreak",
    ),
    "problem:single-source": (
        "single source", "only one source", "same domain", "single domain",
        "only one domain", "not independent", "lack independent source", "circular sourcing",
    ),
    "problem:one-sided": (
        "one-sided", "cherry-pick", "missing counter-evidence", "no counter-evidence",
        "lack counter-evidence", "without counter-evidence", "ignore counter-evidence",
        "ignore contradicting evidence", "limitations not stated", "unbalanced",
    ),
    "problem:low-confidence": (
        "low confidence", "confidence is below", "confidence below", "no stated confidence",
        "state no confidence", "missing confidence", "confidence not stated",
    ),
    "problem:overconfident": (
        "overconfident", "overconfidence", "overstate", "overclaim", "overreach",
        "confidence too high", "too confident", "overly confident",
    ),
    "problem:dead-code": (
        "commented-out code", "dead code", "unused code", "unused import", "unreachable code",
        "debug print", "leftover debug", "console.log",
    ),
    "problem:duplication": (
        "duplicate code", "code duplication", "copy-pasted", "copy-pasting", "copy-paste code",
        "duplicated logic", "repeated code", "redundant code",
    ),
    "problem:security": (
        "security issue", "security vulnerability", "vulnerability", "vulnerable",
        "insecure", "sql injection", "command injection", "shell injection", "xss",
        "cross-site scripting", "path traversal", "remote code execution",
        "unsafe deserialization", "csrf",
    ),
    "problem:missing-docs": (
        "missing documentation", "undocumented", "no documentation", "lack documentation",
        "missing docstring", "no docstring", "missing docs", "update the doc",
        "update the documentation",
    ),
    "problem:error-handling": (
        "missing error handling", "no error handling", "lack error handling",
        "without error handling", "unhandled exception", "unhandled error",
        "swallow exception", "swallow error", "bare except", "silent failure",
        "silently ignore", "silent fallback", "fail silently",
    ),
    "problem:premature-completion": (
        "premature termination", "prematurely", "declare victory", "victory declared",
        "claim completion", "claim without matching file change", "abandon step",
        "give up", "gave up", "stop early",
    ),
    "problem:no-progress": (
        "no forward progress", "no progress", "stall", "no improvement since",
    ),
}

NEUTRAL_PHRASES: tuple[str, ...] = (
    # Longer phrases that start like a problem phrase but are not that problem: at one
    # position the longest phrase wins, and these carry no tag ("add a regression test" is
    # advice, not a regression; "no source code" is not a missing citation).
    "regression test",
    "regression suite",
    "regression analysis",
    "regression model",
    "no source code",
    "missing source file",
    "no tests fail",
    "no test failure",
)

FINDING_KIND_TAGS: Mapping[str, str] = {
    # bot/judge/checks/mechanical.py
    "conflict-marker": "problem:merge-conflict",
    "todo-marker": "problem:placeholder",
    "secret": "problem:secret",
    "invalid-json": "problem:invalid-format",
    "invalid-toml": "problem:invalid-format",
    "invalid-yaml": "problem:invalid-format",
    "broken-link": "problem:broken-link",
    "broken-anchor": "problem:broken-link",
    "empty-file": "problem:empty-file",
    # bot/judge/checks/research_claims.py
    "research-uncited": "problem:missing-citation",
    "research-evidence": "problem:missing-citation",
    "research-domains": "problem:single-source",
    "research-counter-evidence": "problem:one-sided",
    "research-claims": "problem:incomplete",
    "research-confidence": "problem:low-confidence",
    "research-claim-confidence": "problem:low-confidence",
    "research-verifiable-ratio": "problem:unsupported-claim",
}

# fmt: on


def _inflected(word: str) -> bool:
    if word.endswith("ing"):
        return bool(_VOWELS & set(word[:-3]))
    if word.endswith("ed") and not word.endswith("eed"):
        return bool(_VOWELS & set(word[:-2]))
    return word.endswith("s") and not word.endswith(("ss", "us", "is"))


def word_forms(word: str) -> tuple[str, ...]:
    """The forms a phrase's word matches, longest first: itself, plural, -ed and -ing. Short
    words, function words, words that are not all letters and words already inflected
    ("missing", "tests") match only as written."""
    word = word.lower()
    if len(word) < 3 or word in FUNCTION_WORDS or not word.isalpha() or _inflected(word):
        return (word,)
    if word.endswith("e"):
        forms = {word + "s", word + "d", (word if word.endswith("ee") else word[:-1]) + "ing"}
    elif word.endswith("y") and word[-2] not in _VOWELS:
        forms = {word[:-1] + "ies", word[:-1] + "ied", word + "ing"}
    else:
        plural = "es" if word.endswith(("s", "x", "z", "ch", "sh")) else "s"
        forms = {word + plural, word + "ed", word + "ing"}
        if _SHORT_SYLLABLE.search(word):
            # "stub" -> "stubbed": doubled or not, whichever the writer chose
            forms |= {word + word[-1] + "ed", word + word[-1] + "ing"}
    return tuple(sorted({word, *forms}, key=lambda f: (-len(f), f)))


INJECTION_TAG = "problem:prompt-injection"
"""Every injection finding (bot/judge/checks/injection.py) carries this tag, whatever its kind."""

ANSWER_LIST_TAGS: Mapping[str, str] = {
    # A round's structured answer (RoundRecord.extra): a non-empty list under these keys.
    "unsupported_claims": "problem:unsupported-claim",
    "missing_items": "problem:incomplete",
}

NO_PROGRESS_TAG = "problem:no-progress"
"""A completion round that answered `forward_progress: false`."""


_SPLIT = re.compile(r"[\s_-]+")
SEPARATOR = r"[\s_-]*+"
"""What may stand between a phrase's words: spaces, hyphens and underscores, or nothing."""

# the regex, and the tags of each capture group by number (0, no group: none)
Matcher = tuple[re.Pattern[str], tuple[frozenset[str], ...]]


class PhraseTrie:
    """Phrases by word, so phrases that share their first words share their regex."""

    __slots__ = ("next", "tags")  # a repository's thousand phrases make thousands of nodes

    def __init__(self) -> None:
        self.next: dict[str, PhraseTrie] = {}
        self.tags: set[str] | None = None  # set where a phrase ends

    def add(self, phrase: str) -> set[str]:
        node = self
        for word in filter(None, _SPLIT.split(phrase.lower())):
            node = node.next.setdefault(word, PhraseTrie())
        node.tags = set() if node.tags is None else node.tags
        return node.tags


def word_order(word: str, prefix: int) -> tuple[str, int, str]:
    """Where `word` comes among a trie node's words in the regex, `prefix` letters bucketed
    (2 for a phrase's first word, 1 after): longer words first within a bucket."""
    return word[:prefix], -len(word), word


def _branches(trie: PhraseTrie, groups: list[frozenset[str]], prefix: int) -> str:
    # Rendered in their final order, since groups are numbered as written.
    words = sorted(trie.next, key=lambda w: word_order(w, prefix))
    alternatives = [
        (w, f"(?:{'|'.join(map(re.escape, word_forms(w)))}){_after(trie.next[w], groups)}")
        for w in words
    ]
    return _bucketed(alternatives, 1, prefix)


def _bucketed(items: list[tuple[str, str]], depth: int, deepest: int) -> str:
    # behind a lookahead on their first letters, so a position tries the few that can match
    out = []
    for start, group in groupby(items, key=lambda item: item[0][:depth]):
        entries = list(group)
        inner = (
            _bucketed(entries, depth + 1, deepest)
            if depth < deepest and len(entries) > 1
            else "|".join(regex for _, regex in entries)
        )
        out.append(f"(?={re.escape(start)})(?:{inner})")
    return "|".join(out)


def _after(node: PhraseTrie, groups: list[frozenset[str]]) -> str:
    """Longer phrases first, then the end of this one: an empty group whose number names
    the phrase's tags."""
    options = [f"{SEPARATOR}(?:{_branches(node, groups, 1)})"] if node.next else []
    if node.tags is not None:
        groups.append(frozenset(node.tags))
        options.append("()")
    return f"(?:{'|'.join(options)})"


def phrase_trie(terms: Mapping[str, Iterable[str]], neutral: Iterable[str]) -> PhraseTrie:
    """The word trie of tag -> phrases and of `neutral` phrases (which end with no tag)."""
    trie = PhraseTrie()
    for phrase in neutral:
        trie.add(phrase)
    for tag, phrases in terms.items():
        for phrase in phrases:
            trie.add(phrase).add(tag)
    return trie


def compile_phrases(terms: Mapping[str, Iterable[str]], neutral: Iterable[str]) -> Matcher:
    """One regex for tag -> phrases (and `neutral` phrases, which carry no tag): it matches,
    zero-width, at the start of each phrase, and its last capture group names the tags."""
    trie = phrase_trie(terms, neutral)
    groups: list[frozenset[str]] = [frozenset()]
    if not trie.next:
        return re.compile("(?!)"), tuple(groups)
    first = "".join(sorted({re.escape(w[0]) for w in trie.next}))
    # Zero-width matches (a lookahead), so a phrase inside a longer one is still seen.
    source = rf"(?<!\w)(?=[{first}])(?=(?:{_branches(trie, groups, 2)})(?!\w))"
    return re.compile(source, re.IGNORECASE), tuple(groups)
