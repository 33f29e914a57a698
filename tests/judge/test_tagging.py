"""Rubric-term tagging: the thesaurus, the matching rules, a record's tags and the
per-repository extension."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from bot.judge import tagging
from bot.judge.records import Finding, RubricName, VerdictRecord
from bot.judge.tagging import (
    DIMENSION_TAGS,
    MAX_PHRASE_CHARS,
    MAX_PHRASES_PER_TAG,
    MAX_TAG_NAME_CHARS,
    MAX_TAGS,
    TagTerms,
    dimension_tag,
    tags_for,
    valid_tag_name,
)
from bot.judge.tagging.thesaurus import (
    DIMENSION_PHRASES,
    FINDING_KIND_TAGS,
    NEUTRAL_PHRASES,
    PROBLEM_PHRASES,
    RUBRIC_DIMENSIONS,
    compile_phrases,
    phrase_trie,
    word_forms,
)
from tests.support.tag_oracles import BUILTIN_TAGS, text_tags
from tests.support.verdict_builders import make_record, make_round

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "tagging.md"


def record(
    reasoning: str = "",
    *,
    rubric: RubricName = RubricName.CONTENT,
    rounds: list[dict[str, Any]] | None = None,
    **overrides: Any,
) -> VerdictRecord:
    """A record whose only words are the ones a test gives, with no low scores."""
    dims = RUBRIC_DIMENSIONS[rubric]
    high = {d: (1.0 if rubric is RubricName.CODE else 5) for d in dims}
    round_fields = rounds if rounds is not None else [{}]
    built = [
        make_round(**{"reasoning": "", "improvements": [], "scores": high, **fields})
        for fields in round_fields
    ]
    fields: dict[str, Any] = {
        "rubric": rubric,
        "reasoning": reasoning,
        "improvements": [],
        "scores": high,
        "previous_rounds": built,
    }
    fields.update(overrides)
    return make_record(**fields)


# ---------------------------------------------------------------------------
# Every built-in tag, from a sentence a judge could write

PROBLEM_SENTENCES = [
    ("problem:missing-citation", "The second claim has no citation."),
    ("problem:unsupported-claim", "The latency figure is an unsupported claim."),
    ("problem:stub", "parse_config is still a stub that returns None."),
    ("problem:placeholder", "The README keeps a TODO where the install steps belong."),
    ("problem:scope-creep", "Reformatting the unrelated modules is scope creep."),
    ("problem:missing-tests", "The new retry logic is untested."),
    ("problem:test-gaming", "test_total looks written to pass: it asserts the mocked value."),
    ("problem:broken-link", "The link to setup.md is a dead link."),
    ("problem:hard-coded-result", "compute_score returns a hardcoded value of 0.9."),
    ("problem:secret", "An AWS access token is committed in config.py."),
    ("problem:regression", "This breaks existing callers of load()."),
    ("problem:incomplete", "The migration is only partially implemented."),
    ("problem:off-topic", "Most of the page is off-topic for the requested runbook."),
    ("problem:requirement-drift", "It ignores the feedback from the last round."),
    ("problem:hallucination", "It calls requests.fetch_json, a non-existent API."),
    ("problem:contradiction", "Section 2 contradicts the summary."),
    ("problem:factual-error", "The release year of Python 3 is a factual error."),
    ("problem:broken-code", "The module has a syntax error on line 12."),
    ("problem:invalid-format", "The front matter is malformed."),
    ("problem:merge-conflict", "A merge conflict marker was left in the file."),
    ("problem:empty-file", "docs/intro.md is an empty file."),
    ("problem:prompt-injection", "The file holds a prompt injection asking for an accept."),
    ("problem:single-source", "All three links are on the same domain."),
    ("problem:one-sided", "The review cherry-picks favourable studies."),
    ("problem:low-confidence", "The report has no stated confidence."),
    ("problem:overconfident", "The conclusion is overconfident for two anecdotes."),
    ("problem:dead-code", "There is commented-out code at the end of the handler."),
    ("problem:duplication", "The validation is copy-pasted into three handlers."),
    ("problem:security", "Building the query by concatenation allows SQL injection."),
    ("problem:missing-docs", "The new public function is undocumented."),
    ("problem:error-handling", "The client swallows exceptions from the network call."),
    ("problem:premature-completion", "The summary declares victory with two steps left."),
    ("problem:no-progress", "This push makes no progress on the open items."),
]

DIMENSION_SENTENCES = [
    (RubricName.CONTENT, "semantic", "The terminology is accurate."),
    (RubricName.CONTENT, "pragmatic", "The steps are actionable."),
    (RubricName.CONTENT, "syntactic", "The document is well structured."),
    (RubricName.CODE, "correctness", "The loop has an off-by-one bug."),
    (RubricName.CODE, "scope_adherence", "The change stays within scope."),
    (RubricName.CODE, "code_quality", "Readability suffers from deep nesting."),
    (RubricName.CODE, "completeness", "Edge cases are not handled."),
    (RubricName.RESEARCH, "support", "The cited survey supports the first claim."),
    (RubricName.RESEARCH, "sourcing", "Most sources are blogs, not primary sources."),
    (RubricName.RESEARCH, "balance", "The counter-evidence section is thin."),
    (RubricName.RESEARCH, "calibration", "A stated confidence of 95% is too high."),
]


@pytest.mark.parametrize(("tag", "sentence"), PROBLEM_SENTENCES)
def test_each_problem_tag_from_a_judge_sentence(tag: str, sentence: str) -> None:
    assert tag in tags_for(record(sentence))


@pytest.mark.parametrize(("rubric", "dimension", "sentence"), DIMENSION_SENTENCES)
def test_each_dimension_tag_from_a_judge_sentence(
    rubric: RubricName, dimension: str, sentence: str
) -> None:
    assert dimension_tag(dimension) in tags_for(record(sentence, rubric=rubric))


def test_the_sentence_tables_cover_every_phrase_tag() -> None:
    assert {t for t, _ in PROBLEM_SENTENCES} == set(PROBLEM_PHRASES)
    assert {d for _, d, _ in DIMENSION_SENTENCES} == set(DIMENSION_PHRASES)


def test_the_dimension_phrases_are_exactly_the_rubrics_dimensions() -> None:
    dimensions = {d for ds in RUBRIC_DIMENSIONS.values() for d in ds}
    assert set(DIMENSION_PHRASES) == dimensions
    assert {dimension_tag(d) for d in dimensions} == DIMENSION_TAGS
    assert "dimension:scope-adherence" in DIMENSION_TAGS


@pytest.mark.parametrize(
    ("tag", "phrase"),
    [(t, p) for t, ps in PROBLEM_PHRASES.items() for p in ps]
    + [(dimension_tag(d), p) for d, ps in DIMENSION_PHRASES.items() for p in ps],
)
def test_every_phrase_matches_as_written_and_in_capitals(tag: str, phrase: str) -> None:
    assert tag in text_tags(phrase)
    assert tag in text_tags(f"Note: {phrase.upper()}.")


def test_every_tag_is_a_valid_tag_name_and_listed_in_the_docs() -> None:
    doc = DOC.read_text(encoding="utf-8")
    for tag in BUILTIN_TAGS:
        assert valid_tag_name(tag), tag
        assert f"`{tag}`" in doc, f"docs/tagging.md does not list {tag}"
    assert len(BUILTIN_TAGS) == len(set(BUILTIN_TAGS))


# ---------------------------------------------------------------------------
# Matching rules

NEGATIVES = [
    ("problem:stub", "A stubborn bug in the parser."),
    ("problem:stub", "my_stub_helper is renamed."),
    ("problem:secret", "Ask the secretary."),
    ("problem:secret", "The design is secretive."),
    ("problem:secret", "No secrets are committed."),
    ("problem:secret", "It does not expose the token."),
    ("problem:secret", "The API key rotation doc is fine."),
    ("problem:secret", "The password reset flow is documented clearly."),
    ("problem:secret", "No hardcoded passwords."),
    ("problem:hallucination", "The page is made up of three sections."),
    ("problem:missing-citation", "There are no source code changes."),
    ("problem:single-source", "Each claim cites more than one source."),
    ("problem:duplication", "Copy and paste the command into a shell."),
    ("problem:regression", "The study uses a regression model."),
    ("problem:contradiction", "The indentation is inconsistent."),
    ("problem:regression", "Add a regression test for the parser."),
    ("problem:regression", "A regressive tax is described."),
    ("problem:broken-link", "There are no broken links."),
    ("problem:stub", "It doesn't contain stubs."),
    ("problem:stub", "It doesn\u2019t contain stubs."),
    ("problem:placeholder", "No stubs or placeholders remain."),
    ("problem:missing-tests", "No tests fail."),
    ("problem:missing-tests", "The testament is quoted."),
    ("problem:hard-coded-result", "A hardcore fan wrote it."),
    ("problem:incomplete", "It was incompletely described."),
    ("problem:missing-citation", "Nothing is wrong; there are no missing citations."),
    ("problem:scope-creep", "The scope is narrow and the change creeps nowhere."),
    ("problem:off-topic", "A topical subject."),
    ("problem:placeholder", "The todolist module is documented."),
    ("problem:security", "It does not introduce any vulnerability."),
]


@pytest.mark.parametrize(("tag", "sentence"), NEGATIVES)
def test_sentences_that_must_not_tag(tag: str, sentence: str) -> None:
    assert tag not in tags_for(record(sentence, rubric=RubricName.CODE))


@pytest.mark.parametrize(
    ("word", "forms"),
    [
        ("stub", ("stubbing", "stubbed", "stubing", "stubed", "stubs", "stub")),
        ("code", ("coding", "coded", "codes", "code")),
        ("agree", ("agreeing", "agreed", "agrees", "agree")),
        ("copy", ("copying", "copied", "copies", "copy")),
        ("play", ("playing", "played", "plays", "play")),
        ("patch", ("patching", "patched", "patches", "patch")),
        ("status", ("statusing", "statused", "statuses", "status")),
        ("need", ("needing", "needed", "needs", "need")),
        ("string", ("stringing", "stringed", "strings", "string")),
        ("Link", ("linking", "linked", "links", "link")),
        ("missing", ("missing",)),
        ("hardcoded", ("hardcoded",)),
        ("tests", ("tests",)),
        ("not", ("not",)),
        ("the", ("the",)),
        ("is", ("is",)),
        ("404", ("404",)),
        ("won't", ("won't",)),
    ],
)
def test_word_forms(word: str, forms: tuple[str, ...]) -> None:
    assert word_forms(word) == forms


@pytest.mark.parametrize(
    "text",
    [
        "hard-coded value",
        "hardcoded values",
        "hard coded value",
        "hard_coded_value",
        "HARD-CODING VALUES",
        "hard-\n  coded value",
    ],
)
def test_spaces_hyphens_underscores_or_nothing_between_words(text: str) -> None:
    assert "problem:hard-coded-result" in text_tags(text)


def test_negation_is_the_two_words_before_in_the_same_sentence() -> None:
    assert "problem:stub" not in text_tags("There are no stubs.")
    assert "problem:stub" not in text_tags("It contains no obvious stubs.")
    assert "problem:stub" in text_tags("No docs. The loader is a stub.")
    assert "problem:stub" in text_tags("There is not a single test and one stub.")
    assert "problem:stub" in text_tags("Nothing was said about the stub.")
    # a phrase that starts with a negator is not negated by it
    assert "problem:missing-tests" in text_tags("There are no tests.")


def test_negation_leaves_dimension_tags() -> None:
    assert "dimension:pragmatic" in tags_for(record("The steps are not actionable."))


def test_a_phrase_inside_a_longer_one_is_still_seen() -> None:
    terms = TagTerms({"team:alpha": ("alpha beta",), "team:beta": ("beta",)})
    assert {"team:alpha", "team:beta"} <= text_tags("alpha beta", terms)


def test_at_one_position_the_longer_phrase_wins() -> None:
    assert "problem:regression" not in text_tags("regression tests")
    assert "problem:regression" in text_tags("regressions")
    assert "problem:regression" in text_tags("a regression, then tests")


def test_no_phrases_match_nothing() -> None:
    pattern, tags = compile_phrases({}, ())
    assert pattern.search("anything at all") is None
    assert tags == (frozenset(),)


def test_neutral_phrases_carry_no_tag() -> None:
    for phrase in NEUTRAL_PHRASES:
        assert text_tags(phrase) <= DIMENSION_TAGS, phrase


# ---------------------------------------------------------------------------
# A record's tags


def test_tags_come_from_every_round_and_every_part_of_the_answer() -> None:
    rec = record(
        "The headline mentions a dead link.",
        rubric=RubricName.CODE,
        improvements=["Remove the hardcoded secret"],
        rounds=[
            {
                "reasoning": "The parser is a stub.",
                "improvements": ["add tests for the parser"],
                "extra": {"issues": [{"severity": "major", "description": "scope creep in cli"}]},
            },
            {
                "reasoning": "Deep round: it ignores the directive about logging.",
                "extra": {"questions_for_user": ["Is the dummy data intended?"]},
            },
        ],
    )
    assert set(tags_for(rec)) >= {
        "problem:broken-link",
        "problem:secret",
        "problem:stub",
        "problem:missing-tests",
        "problem:scope-creep",
        "problem:requirement-drift",
        "problem:placeholder",
    }


def test_dimension_tags_only_of_the_records_rubric() -> None:
    sentence = "This is scope creep and the steps are actionable."
    content = tags_for(record(sentence, rubric=RubricName.CONTENT))
    code = tags_for(record(sentence, rubric=RubricName.CODE))
    completion = tags_for(record(sentence, rubric=RubricName.COMPLETION))
    assert "dimension:pragmatic" in content and "dimension:scope-adherence" not in content
    assert "dimension:scope-adherence" in code and "dimension:pragmatic" not in code
    assert not DIMENSION_TAGS & set(completion)
    for tags in (content, code, completion):
        assert "problem:scope-creep" in tags


CONTENT_DIMS = ("semantic", "pragmatic", "syntactic")
CODE_DIMS = ("correctness", "scope_adherence", "code_quality", "completeness")
RESEARCH_DIMS = ("support", "sourcing", "balance", "calibration")


def scored(dims: tuple[str, ...], *values: float) -> dict[str, float]:
    return dict(zip(dims, values, strict=True))


@pytest.mark.parametrize(
    ("rubric", "scores", "expected"),
    [
        (RubricName.CONTENT, scored(CONTENT_DIMS, 2, 3, 5), {"semantic"}),
        (RubricName.CONTENT, scored(CONTENT_DIMS, 2.9, 1, 5), {"semantic", "pragmatic"}),
        (RubricName.CONTENT, scored(CONTENT_DIMS, 3, 3, 3), set()),
        (RubricName.CODE, scored(CODE_DIMS, 0.69, 0.7, 1, 0), {"correctness", "completeness"}),
        (RubricName.CODE, scored(CODE_DIMS, 0.7, 0.7, 0.7, 0.7), set()),
        (RubricName.RESEARCH, scored(RESEARCH_DIMS, 3, 2, 4, 1), {"sourcing", "calibration"}),
        (RubricName.CONTENT, {"unknown": 1, **scored(CONTENT_DIMS, 4, 4, 4)}, set()),
        (RubricName.COMPLETION, {"semantic": 1}, set()),
    ],
)
def test_low_scores_tag_their_dimension_without_a_phrase(
    rubric: RubricName, scores: dict[str, float], expected: set[str]
) -> None:
    headline = tags_for(record(rubric=rubric, scores=scores))
    in_a_round = tags_for(record(rubric=rubric, rounds=[{"scores": scores}, {}]))
    want = {dimension_tag(d) for d in expected}
    assert set(headline) == want
    assert set(in_a_round) == want


def test_mechanical_and_injection_findings_tag_by_kind() -> None:
    def finding(kind: str, source: str = "mechanical") -> Finding:
        return Finding.model_validate(
            {"source": source, "kind": kind, "severity": "soft", "path": "a.md", "message": "x"}
        )

    rec = record(
        mechanical_findings=[finding("secret"), finding("research-domains"), finding("new-kind")],
        injection_findings=[finding("role-claim", "injection")],
    )
    assert tags_for(rec) == (
        "problem:prompt-injection",
        "problem:secret",
        "problem:single-source",
    )
    assert tags_for(record(injection_findings=[])) == ()


def test_finding_messages_are_not_read_as_text() -> None:
    # a path or message may say anything; only the kind decides
    message = Finding(
        source="mechanical", kind="empty-file", severity="soft", path="stub.md", message="stub"
    )
    assert tags_for(record(mechanical_findings=[message])) == ("problem:empty-file",)


def _kinds_in(path: str, pattern: str) -> set[str]:
    return set(re.findall(pattern, (ROOT / path).read_text(encoding="utf-8")))


def test_every_mechanical_finding_kind_has_a_tag() -> None:
    mechanical = _kinds_in("bot/judge/checks/mechanical.py", r'_finding\(\s*"([a-z-]+)"')
    research = _kinds_in("bot/judge/checks/research_claims.py", r'"(research-[a-z-]+)"')
    assert len(mechanical) >= 8 and len(research) >= 7
    assert mechanical | research == set(FINDING_KIND_TAGS)
    assert set(FINDING_KIND_TAGS.values()) <= set(BUILTIN_TAGS)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"unsupported_claims": ["X doubles Y"]}, ("problem:unsupported-claim",)),
        ({"unsupported_claims": []}, ()),
        ({"missing_items": ["the CLI flag"], "pass": False}, ("problem:incomplete",)),
        ({"forward_progress": False}, ("problem:no-progress",)),
        ({"forward_progress": True}, ()),
        ({"confidence": "low", "issues": []}, ()),
    ],
)
def test_structured_answers_tag_what_they_state(
    extra: dict[str, Any], expected: tuple[str, ...]
) -> None:
    rubric = RubricName.COMPLETION
    assert tags_for(record(rubric=rubric, rounds=[{"extra": extra}])) == expected


def test_tags_are_sorted_unique_deterministic_and_bounded() -> None:
    rounds = [
        {"reasoning": "A stub. A placeholder. Untested.", "improvements": ["add tests"]},
        {"reasoning": "Untested stub; TODO left.", "improvements": ["remove the placeholder"]},
    ]
    first = tags_for(record("stub stub stub", rounds=rounds))
    again = tags_for(record("stub stub stub", rounds=list(reversed(rounds))))
    assert first == again == tuple(sorted(set(first)))
    assert first == ("problem:missing-tests", "problem:placeholder", "problem:stub")
    everything = " ".join(p for ps in PROBLEM_PHRASES.values() for p in ps)
    tags = tags_for(record(everything * 3, rubric=RubricName.CODE))
    assert set(tags) <= set(BUILTIN_TAGS)
    assert set(PROBLEM_PHRASES) <= set(tags)


def test_an_empty_record_has_no_tags() -> None:
    assert tags_for(record("", rounds=[])) == ()


def test_a_megabyte_of_reasoning_is_tagged() -> None:
    sentence = (
        "The section makes an unsupported claim about latency; the example is a stub and "
        "the structure is clear. "
    )
    text = (sentence * (1_000_000 // len(sentence) + 1))[:1_000_000]
    assert tags_for(record(text)) == (
        "dimension:syntactic",
        "problem:stub",
        "problem:unsupported-claim",
    )


@pytest.mark.parametrize(
    "text",
    [
        "no " * 300_000,
        "hard" + " " * 1_000_000 + "code",
        "hard -" * 150_000,
        "s" * 1_000_000,
        "_-" * 500_000,
    ],
)
def test_adversarial_megabytes_complete(text: str) -> None:
    tags = text_tags(text)
    assert tags <= set(BUILTIN_TAGS)


def test_a_phrase_split_by_a_long_run_of_spaces_still_matches() -> None:
    assert "problem:hard-coded-result" in text_tags("hard" + " " * 100_000 + "coded value")


# ---------------------------------------------------------------------------
# The per-repository extension


def test_extension_adds_phrases_to_a_builtin_tag_and_new_tags() -> None:
    terms = TagTerms.model_validate(
        {
            "problem:stub": ["dummy handler"],
            "docs:missing-changelog": ["missing changelog", "no changelog entry"],
        }
    )
    tags = tags_for(record("A dummy handler, a stub, and no changelog entries."), terms)
    assert tags == ("docs:missing-changelog", "problem:stub")
    assert tags_for(record("A dummy handler.")) == ()


def test_extension_follows_the_matching_rules() -> None:
    terms = TagTerms.model_validate({"api:breaking": ["rename field"]})
    assert "api:breaking" in text_tags("It renamed fields in the response.", terms)
    assert "api:breaking" not in text_tags("It never renames fields.", terms)
    assert "api:breaking" not in text_tags("A renamed fieldset.", terms)


@pytest.mark.parametrize(
    ("phrase", "hit", "miss"),
    [
        (".env file", "It commits the .env file.", "It commits the my.env file."),
        ("c++", "Rewritten in C++ today.", "Rewritten in C++x today."),
        ("o'brien rule", "Breaks the O'Brien rule.", "Breaks the O'Briens rule."),
    ],
)
def test_extension_phrases_with_punctuation(phrase: str, hit: str, miss: str) -> None:
    terms = TagTerms.model_validate({"x:y": [phrase]})
    assert "x:y" in text_tags(hit, terms)
    assert "x:y" not in text_tags(miss, terms)


def test_extension_of_a_dimension_tag_applies_to_its_rubric_only() -> None:
    terms = TagTerms.model_validate({"dimension:pragmatic": ["runbook step"]})
    content = record("Each runbook step.", rubric=RubricName.CONTENT)
    code = record("Each runbook step.", rubric=RubricName.CODE)
    assert "dimension:pragmatic" in tags_for(content, terms)
    assert "dimension:pragmatic" not in tags_for(code, terms)


def test_extension_phrase_shared_with_another_tag_gives_both() -> None:
    terms = TagTerms.model_validate({"team:parsing": ["stub"], "team:tests": ["regression test"]})
    assert {"problem:stub", "team:parsing"} <= text_tags("A stub.", terms)
    assert "team:tests" in text_tags("Add a regression test.", terms)


def test_equal_extensions_tag_alike_and_builtins_are_unchanged_after() -> None:
    one = TagTerms.model_validate({"b:x": ["gamma"], "a:y": ["delta"]})
    two = TagTerms.model_validate({"a:y": ["delta"], "b:x": ["gamma"]})
    assert text_tags("gamma delta", one) == text_tags("gamma delta", two) == {"a:y", "b:x"}
    assert text_tags("gamma delta") == frozenset()


def test_extension_phrases_are_normalised() -> None:
    terms = TagTerms.model_validate({"x:y": ["  dummy \n  handler  "]})
    assert terms.root == {"x:y": ("dummy handler",)}
    assert TagTerms().root == {}


def test_extension_limits_hold_at_the_boundary() -> None:
    TagTerms.model_validate({f"t{i}": ["a"] for i in range(MAX_TAGS)})
    TagTerms.model_validate({"t": [f"p{i}" for i in range(MAX_PHRASES_PER_TAG)]})
    TagTerms.model_validate({"t": ["x" * MAX_PHRASE_CHARS]})
    TagTerms.model_validate({"a" * MAX_TAG_NAME_CHARS: ["x"]})


NAME_RULE = 'tag name "Bad" must be lowercase words joined by hyphens'
NOT_A_DIMENSION = "dimension:readability is not a rubric dimension"


@pytest.mark.parametrize(
    ("value", "loc", "message"),
    [
        ({"Bad": ["x"]}, ("Bad", "[key]"), NAME_RULE),
        ({"a" * 65: ["x"]}, ("a" * 65, "[key]"), "at most 64 characters"),
        ({"problem:": ["x"]}, ("problem:", "[key]"), "tag name"),
        ({"a:b:c": ["x"]}, ("a:b:c", "[key]"), "tag name"),
        ({"trailing-": ["x"]}, ("trailing-", "[key]"), "tag name"),
        ({"ok\n": ["x"]}, ("ok\n", "[key]"), "tag name"),
        ({"dimension:readability": ["x"]}, ("dimension:readability", "[key]"), NOT_A_DIMENSION),
        ({"ok": []}, ("ok",), "expected 1 to 20 phrases per tag, got 0"),
        ({"ok": [f"p{i}" for i in range(21)]}, ("ok",), "expected 1 to 20 phrases per tag, got 21"),
        ({"ok": ["   "]}, ("ok", 0), "expected a phrase, got an empty string"),
        ({"ok": ["x" * 101]}, ("ok", 0), "a phrase has at most 100 characters, this one 101"),
        ({"ok": ["fine", "---"]}, ("ok", 1), 'phrase "---" has no letter or digit to match'),
        ({f"t{i}": ["a"] for i in range(51)}, (), "at most 50 tags, got 51"),
        ({"ok": [404]}, ("ok", 0), "valid string"),
        ({"ok": "one phrase"}, ("ok",), "valid tuple"),
        (["a", "b"], (), "valid dictionary"),
    ],
)
def test_extension_validation_errors(value: Any, loc: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        TagTerms.model_validate(value)
    errors = caught.value.errors()
    assert any(tuple(e["loc"]) == loc and message in e["msg"] for e in errors), errors


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("problem:stub", True),
        ("changelog", True),
        ("docs:missing-changelog", True),
        ("a1:b2-c3", True),
        ("1abc", False),
        ("Problem:stub", False),
        ("problem stub", False),
        ("problem:stub-", False),
        ("problem::stub", False),
        ("", False),
    ],
)
def test_valid_tag_name(name: str, valid: bool) -> None:
    assert valid_tag_name(name) is valid


def test_tag_terms_are_frozen() -> None:
    terms = TagTerms.model_validate({"x": ["y"]})
    with pytest.raises(ValidationError):
        terms.root = {}  # type: ignore[misc]


def _doc_example() -> dict[str, Any]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    loaded = yaml.safe_load(blocks[0])
    assert isinstance(loaded, dict) and set(loaded) == {"tags"}
    return loaded


def test_the_docs_example_is_valid_and_tags_as_described() -> None:
    terms = TagTerms.model_validate(_doc_example()["tags"])
    assert "docs:missing-changelog" in text_tags("There is no changelog entry.", terms)
    assert "problem:stub" in text_tags("It returns an empty dict for now.", terms)


def test_json_schema_states_the_limits() -> None:
    schema = TagTerms.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(_doc_example()["tags"])
    assert not validator.is_valid({"Bad": ["x"]})
    assert not validator.is_valid({"ok": []})
    assert not validator.is_valid({"ok": ["x" * 101]})
    assert not validator.is_valid({"ok": [f"p{i}" for i in range(21)]})
    assert not validator.is_valid({f"t{i}": ["a"] for i in range(51)})
    assert schema["description"].startswith("A repository's tags")


# ---------------------------------------------------------------------------
# A repository's phrases: matched by walking their word trie, not by a compiled regex, with
# the regex's results (compile_phrases stays the reference: it still reads the built-in ones)

_WORDS = [
    # inflections of one another, words that run together, punctuation, digits, and letters
    # the regex engine folds specially (long s, dotless and dotted i, Kelvin sign, sigmas,
    # Greek with dialytika, st ligatures)
    *("stub", "stubs", "stubbed", "hard", "code", "coded", "test", "tests", "copy", "copies"),
    *("agree", "regression", "no", "not", "a", "aa", "aaa", "ab", "s", "es", "ing", "ed"),
    *("c++", ".env", "o'brien", "404", "x1", "\u017ftub", "\u0130ndex", "\u0131ndex"),
    *("\u212aelvin", "\u039f\u0394\u039f\u03a3", "\u03c3\u03b1\u03c2", "\u0390", "\u1fd3"),
    *("\ufb05", "\ufb06", "happy", "happi", "iness"),
]
_BETWEEN = [" ", "-", "_", "", "  ", "\n", ". ", ", ", "'", "+", "\u00e9", "\u0131"]


def _random_terms(rng: random.Random) -> dict[str, list[str]]:
    return {
        f"x:t{t}": [
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(1, 5))
        ]
        for t in range(rng.randint(1, 6))
    }


def _random_text(rng: random.Random, terms: dict[str, list[str]]) -> str:
    def cased(word: str) -> str:
        return "".join(c.upper() if rng.random() < 0.3 else c for c in word)

    if rng.random() < 0.5:  # loose words
        words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 150))]
    else:  # the phrases themselves, their words joined anyhow
        phrases = [p for ps in terms.values() for p in ps]
        words = [
            rng.choice(_BETWEEN).join(rng.choice(phrases).split())
            for _ in range(rng.randint(3, 40))
        ]
    return "".join(cased(word) + rng.choice(_BETWEEN) for word in words)


def test_repository_phrases_hit_where_the_compiled_regex_hit() -> None:
    rng = random.Random(20260523)
    tagged = 0
    for _ in range(300):
        terms = _random_terms(rng)
        text = _random_text(rng, terms)
        compiled = list(tagging._regex_hits(compile_phrases(terms, ()), text))
        index = tagging._PhraseIndex(phrase_trie(terms, ()))
        assert tagging._TextScan(index, text).hits() == (compiled, len(text)), (terms, text)
        tagged += len(compiled)
    assert tagged > 1000  # the texts do hold the phrases


def _compiled_text_tags(text: str, terms: TagTerms) -> frozenset[str]:
    """The tags as they were: the built-in and the repository's phrases in one regex."""
    thesaurus = tagging._builtin_terms()
    for tag, phrases in terms.root.items():
        thesaurus.setdefault(tag, []).extend(phrases)
    found: set[str] = set()
    hits = tagging._regex_hits(compile_phrases(thesaurus, NEUTRAL_PHRASES), text)
    tagging._scan(hits, text, found)
    return frozenset(found)


def test_repository_phrases_with_the_builtin_ones_tag_as_the_compiled_regex_did() -> None:
    rng = random.Random(7)
    builtin = [p for ps in PROBLEM_PHRASES.values() for p in ps]
    for _ in range(3):
        terms = TagTerms.model_validate(_random_terms(rng))
        phrases = [p for ps in terms.root.values() for p in ps]
        words = [rng.choice(phrases + builtin + ["no", "not", "the", "."]) for _ in range(400)]
        text = " ".join(words)
        assert text_tags(text, terms) == _compiled_text_tags(text, terms)


@pytest.mark.parametrize(
    ("text", "tagged"),
    [
        ("Connection-pool leaks.", True),
        ("connection_pool_leak", True),
        ("connectionpool leaked", True),
        ("CONNECTION POOL LEAK", True),
        ("connection pooling leaks", True),
        ("connection pool leakage", False),
        ("disconnection pool leak", False),
        ("no connection pool leak", False),
        # punctuation between the words breaks the phrase
        ("a connection. Pool leak", False),
        ("connection, pool leak", False),
        ("connection/pool leak", False),
    ],
)
def test_a_repository_multi_word_phrase(text: str, tagged: bool) -> None:
    terms = TagTerms.model_validate({"team:db": ["connection pool leak"]})
    assert ("team:db" in text_tags(text, terms)) is tagged
    assert text_tags(text, terms) == _compiled_text_tags(text, terms)


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("\u038c\u03a1\u039f\u03a3", "x:greek"),  # capitals, final sigma
        ("\u03cc\u03c1\u03bf\u03c3", "x:greek"),  # a medial sigma at the end
        ("\u212aELVIN scale", "x:kelvin"),  # Kelvin sign
        ("la\u017ft step", "x:long-s"),
        ("\u0130STANBUL office", "x:dotted"),  # capital I with a dot
        ("\u0131stanbul office", "x:dotted"),  # dotless i
    ],
)
def test_a_repository_phrase_matches_in_any_case_as_the_regex_engine_folds_it(
    text: str, tag: str
) -> None:
    terms = TagTerms.model_validate(
        {
            "x:greek": ["\u03cc\u03c1\u03bf\u03c2"],
            "x:kelvin": ["kelvin scale"],
            "x:long-s": ["last step"],
            "x:dotted": ["istanbul office"],
        }
    )
    assert text_tags(text, terms) == {tag} == _compiled_text_tags(text, terms)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # at one position the longest phrase wins, the built-in ones and the repository's alike
        ("Add a regression test.", set()),
        ("A regression, then tests.", {"problem:regression", "team:x"}),
        ("It is a stub function.", {"team:y"}),
        ("It is a stub.", {"dimension:completeness", "problem:stub"}),
        ("missing tests", {"problem:missing-tests"}),
        ("It is missing.", {"team:z"}),
    ],
)
def test_repository_phrases_overlapping_builtin_ones(text: str, expected: set[str]) -> None:
    terms = TagTerms.model_validate(
        {"team:x": ["regression"], "team:y": ["stub function"], "team:z": ["missing"]}
    )
    assert text_tags(text, terms) == expected == _compiled_text_tags(text, terms)


def _overlapping_terms() -> TagTerms:
    """Nearly a thousand phrases of "a" and "aa" in different orders, each ending in "b": at
    the start of every run of a's the walk tries thousands of them and finds none."""
    rng = random.Random(3)

    def phrase() -> str:
        return " ".join(rng.choice(["a", "aa"]) for _ in range(33)) + " b"  # 100 at most

    tags = {f"x:t{t}": [phrase() for _ in range(MAX_PHRASES_PER_TAG)] for t in range(MAX_TAGS - 2)}
    return TagTerms.model_validate({**tags, "x:early": ["early bird"], "x:late": ["late bird"]})


def test_past_its_steps_a_text_is_read_for_the_builtin_phrases_only() -> None:
    terms = _overlapping_terms()
    text = "An early bird. " + ("a" * 50 + " ") * 400 + "A late bird and a stub."
    index = tagging._phrase_index(tuple(sorted(terms.root.items())))
    assert 0 < tagging._TextScan(index, text).hits()[1] < len(text) // 2
    # the repository's phrases count up to where the steps ran out, the built-in ones to the end
    assert text_tags(text, terms) == {"x:early", "problem:stub", "dimension:completeness"}
    assert "x:late" in text_tags("A late bird and a stub.", terms)


def test_text_is_folded_as_the_regex_engine_ignores_case() -> None:
    for char in map(chr, [*range(0x2200), *range(0xFB00, 0xFB07)]):
        folded = tagging._folded_char(char)
        assert re.fullmatch(re.escape(folded), char, re.IGNORECASE), hex(ord(char))
        assert tagging._folded_char(folded) == folded
    assert tagging._folded("\u0130\u212a\u017f\u03a3") == "iks\u03c3"
