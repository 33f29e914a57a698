"""Reply parsing: every shape a model has been seen to produce, and everything refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.judge.rubrics import CodeRubric, CompletionRubric, ContentRubric
from bot.judge.rubrics.parsing import (
    ParseError,
    extract_json_object,
    norm_key,
    parse_answer,
    to_int_score,
    to_number,
)

CONTENT = ContentRubric()
GOOD = {
    "verdict": "accept",
    "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
    "average": 4.33,
    "reasoning": "Clear and correct.",
    "improvements": [],
}


def test_plain_compact_json() -> None:
    answer = parse_answer(json.dumps(GOOD), CONTENT)
    assert answer.scores == {"semantic": 4, "pragmatic": 4, "syntactic": 5}
    assert answer.average == 4.33
    assert answer.reasoning == "Clear and correct."
    assert answer.model_verdict == "accept"
    assert answer.extra == {}


def test_pretty_printed_json() -> None:
    """Seed 000 lesson 6: models return indented JSON."""
    assert parse_answer(json.dumps(GOOD, indent=4), CONTENT).scores["syntactic"] == 5


@pytest.mark.parametrize(
    "wrapper",
    [
        "```json\n{}\n```",
        "```JSON\n{}\n```",
        "```\n{}\n```",
        "Here is my evaluation:\n\n```json\n{}\n```\n\nLet me know if you need more.",
        "Sure! {}",
        "{} -- end of verdict",
        "Thinking about it...\n{}\nDone.",
    ],
)
def test_fences_and_prose_are_stripped(wrapper: str) -> None:
    text = wrapper.replace("{}", json.dumps(GOOD, indent=2))
    assert parse_answer(text, CONTENT).scores["semantic"] == 4


def test_flat_scores() -> None:
    flat = {"semantic": 3, "pragmatic": 4, "syntactic": 4, "verdict": "accept"}
    answer = parse_answer(json.dumps(flat), CONTENT)
    assert answer.scores == {"semantic": 3, "pragmatic": 4, "syntactic": 4}
    assert answer.average == 3.67


def test_nested_score_objects_and_key_spelling() -> None:
    """Per-dimension objects and capitalised keys are read, not guessed."""
    obj = {
        "Scores": {
            "Semantic": {"score": 4, "reason": "ok"},
            "PRAGMATIC": {"Score": "5"},
            "syntactic": 3,
        }
    }
    assert parse_answer(json.dumps(obj), CONTENT).scores == {
        "semantic": 4,
        "pragmatic": 5,
        "syntactic": 3,
    }


@pytest.mark.parametrize("value", ["4", "4.0", " 4 ", 4.0, "+4", "4e0"])
def test_numbers_as_strings_and_whole_floats(value: Any) -> None:
    obj = {"scores": {"semantic": value, "pragmatic": 4, "syntactic": 4}}
    assert parse_answer(json.dumps(obj), CONTENT).scores["semantic"] == 4


def test_missing_average_is_computed() -> None:
    obj = {"scores": {"semantic": 3, "pragmatic": 3, "syntactic": 4}}
    answer = parse_answer(json.dumps(obj), CONTENT)
    assert answer.average == 3.33
    assert "reported_average" not in answer.extra


def test_inconsistent_average_is_recomputed_and_recorded() -> None:
    obj = {"scores": {"semantic": 3, "pragmatic": 3, "syntactic": 4}, "average": 4.5}
    answer = parse_answer(json.dumps(obj), CONTENT)
    assert answer.average == 3.33
    assert answer.extra == {"reported_average": 4.5, "average_recomputed": True}


def test_average_within_rounding_is_accepted() -> None:
    obj = {"scores": {"semantic": 3, "pragmatic": 3, "syntactic": 4}, "average": "3.333"}
    assert parse_answer(json.dumps(obj), CONTENT).extra == {}


def test_non_numeric_average_is_recorded_not_fatal() -> None:
    """The average never decides, so a junk one is noted and recomputed."""
    obj: dict[str, object] = {
        "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 4},
        "average": "high",
    }
    answer = parse_answer(json.dumps(obj), CONTENT)
    assert answer.average == 4.0
    assert answer.extra["reported_average"] == "high"
    obj["average"] = True
    assert parse_answer(json.dumps(obj), CONTENT).extra["reported_average"] == "True"


@pytest.mark.parametrize(
    ("scores", "why"),
    [
        ({"semantic": 6, "pragmatic": 4, "syntactic": 4}, "above range"),
        ({"semantic": 0, "pragmatic": 4, "syntactic": 4}, "below range"),
        ({"semantic": 4.5, "pragmatic": 4, "syntactic": 4}, "not whole"),
        ({"semantic": "4.5", "pragmatic": 4, "syntactic": 4}, "string not whole"),
        ({"semantic": True, "pragmatic": 4, "syntactic": 4}, "boolean"),
        ({"semantic": "four", "pragmatic": 4, "syntactic": 4}, "word"),
        ({"semantic": "4/5", "pragmatic": 4, "syntactic": 4}, "fraction"),
        ({"semantic": None, "pragmatic": 4, "syntactic": 4}, "null"),
        ({"semantic": [4], "pragmatic": 4, "syntactic": 4}, "array"),
        ({"semantic": "", "pragmatic": 4, "syntactic": 4}, "empty string"),
        ({"pragmatic": 4, "syntactic": 4}, "missing dimension"),
        ({"semantic": {"reason": "x"}, "pragmatic": 4, "syntactic": 4}, "object without score"),
    ],
)
def test_bad_scores_are_refused(scores: dict[str, Any], why: str) -> None:
    with pytest.raises(ParseError):
        parse_answer(json.dumps({"scores": scores}), CONTENT)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n ",
        "I cannot evaluate this.",
        "[1, 2, 3]",
        json.dumps([GOOD]),
        "42",
        '"accept"',
        "null",
        "{not json at all}",
        '{"semantic": NaN, "pragmatic": 4, "syntactic": 4}',
        '{"scores": {"semantic": Infinity, "pragmatic": 4, "syntactic": 4}}',
        json.dumps({"scores": [4, 4, 4]}),
        json.dumps({"scores": "4,4,4"}),
    ],
)
def test_unusable_replies_are_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_answer(text, CONTENT)


def test_nested_and_flat_disagreeing_is_refused() -> None:
    obj = {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 4}, "semantic": 2}
    with pytest.raises(ParseError):
        parse_answer(json.dumps(obj), CONTENT)


def test_nested_and_flat_agreeing_is_fine() -> None:
    obj = {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 4}, "semantic": "4"}
    assert parse_answer(json.dumps(obj), CONTENT).scores["semantic"] == 4


def test_colliding_keys_after_normalising_are_refused() -> None:
    text = '{"scores": {"semantic": 4, "Semantic": 2, "pragmatic": 4, "syntactic": 4}}'
    with pytest.raises(ParseError):
        parse_answer(text, CONTENT)


def test_multiple_objects_pick_the_verdict_one() -> None:
    """Prose with an unrelated object before the verdict object."""
    text = (
        'The file defines {"name": "demo", "version": 2}. My verdict:\n'
        + json.dumps(GOOD)
        + '\nAlso note {"foo": 1}.'
    )
    assert parse_answer(text, CONTENT).scores["syntactic"] == 5


def test_fenced_config_block_and_verdict_block() -> None:
    text = (
        "The change adds:\n```json\n"
        + json.dumps({"name": "pkg"})
        + "\n```\nVerdict:\n```json\n"
        + json.dumps(GOOD)
        + "\n```"
    )
    assert parse_answer(text, CONTENT).average == 4.33


def test_two_different_verdict_objects_are_ambiguous() -> None:
    other = {**GOOD, "scores": {"semantic": 1, "pragmatic": 1, "syntactic": 1}}
    text = "Draft: " + json.dumps(other) + "\nFinal: " + json.dumps(GOOD)
    with pytest.raises(ParseError, match="ambiguous"):
        parse_answer(text, CONTENT)


def test_the_same_verdict_object_twice_is_fine() -> None:
    text = "```json\n" + json.dumps(GOOD) + "\n```\nAgain: " + json.dumps(GOOD)
    assert parse_answer(text, CONTENT).scores["semantic"] == 4


def test_several_objects_none_verdict_like() -> None:
    with pytest.raises(ParseError):
        extract_json_object('{"a": 1} and {"b": 2}')


def test_single_unrelated_object_is_returned_then_rubric_refuses() -> None:
    assert extract_json_object('x {"a": 1} y') == {"a": 1}
    with pytest.raises(ParseError, match="missing"):
        parse_answer('x {"a": 1} y', CONTENT)


def test_braces_in_prose_do_not_confuse_extraction() -> None:
    text = "Use {braces} carefully. " + json.dumps(GOOD) + " and a stray }"
    assert parse_answer(text, CONTENT).model_verdict == "accept"


def test_strings_with_braces_inside_the_object() -> None:
    obj = {**GOOD, "reasoning": "Uses {x} and ``` fences } inside"}
    assert parse_answer("Answer: " + json.dumps(obj), CONTENT).reasoning == obj["reasoning"]


def test_text_fields_and_improvements_shapes() -> None:
    obj = {
        "scores": {"semantic": 3, "pragmatic": 3, "syntactic": 3},
        "findings": ["first", "second"],
        "revision_suggestions": [{"description": "add examples"}, "fix links", "", 7],
    }
    answer = parse_answer(json.dumps(obj), CONTENT)
    assert answer.reasoning == "first\nsecond"
    assert answer.improvements == ["add examples", "fix links", "7"]
    single = {**obj, "improvements": "one thing"}
    assert parse_answer(json.dumps(single), CONTENT).improvements == ["one thing"]
    structured = {**obj, "reasoning": {"semantic": "fine"}}
    assert json.loads(parse_answer(json.dumps(structured), CONTENT).reasoning) == {
        "semantic": "fine"
    }


def test_improvements_must_be_a_list_or_string() -> None:
    obj = {"scores": {"semantic": 3, "pragmatic": 3, "syntactic": 3}, "improvements": 5}
    with pytest.raises(ParseError):
        parse_answer(json.dumps(obj), CONTENT)


def test_code_rubric_reads_dimensions_block() -> None:
    obj = {
        "verdict": "pass",
        "score": 0.82,
        "dimensions": {
            "correctness": "0.9",
            "scope-adherence": 0.8,
            "code quality": 0.7,
            "completeness": 0.8,
        },
        "confidence": "high",
    }
    answer = parse_answer("```json\n" + json.dumps(obj) + "\n```", CodeRubric())
    assert answer.scores == {
        "correctness": 0.9,
        "scope_adherence": 0.8,
        "code_quality": 0.7,
        "completeness": 0.8,
    }
    assert answer.average == pytest.approx(0.82)


def test_completion_rubric_object_found_in_prose() -> None:
    text = 'Result: {"pass": false, "reason": "r", "forwardProgress": true} thanks'
    assert parse_answer(text, CompletionRubric()).extra["forward_progress"] is True


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("missingItems", "missing_items"),
        ("Missing Items", "missing_items"),
        ("missing-items", "missing_items"),
        ("SEMANTIC", "semantic"),
        (" scope_adherence ", "scope_adherence"),
    ],
)
def test_norm_key(raw: str, expected: str) -> None:
    assert norm_key(raw) == expected


def test_to_number_edges() -> None:
    assert to_number("1e-1", "x") == 0.1
    assert to_number(".5", "x") == 0.5
    bad: object
    for bad in (False, "nan", "inf", float("nan"), float("inf"), {}, "1.2.3", "0x10"):
        with pytest.raises(ParseError):
            to_number(bad, "x")


def test_to_int_score_range_is_inclusive() -> None:
    assert to_int_score(1, "x", 1, 5) == 1
    assert to_int_score("5.0", "x", 1, 5) == 5
    with pytest.raises(ParseError):
        to_int_score(5.000001, "x", 1, 5)


def test_non_string_keys_cannot_occur_but_are_refused() -> None:
    from bot.judge.rubrics.parsing import normalized

    with pytest.raises(ParseError):
        normalized({1: "a"})  # type: ignore[dict-item]


def test_reply_cut_off_after_complete_scores_still_decides() -> None:
    """A token-limit cut leaves a valid inner scores object; nothing else is invented."""
    text = '{"scores": {"semantic": 4, "pragmatic": 2, "syntactic": 5}, "reasoning": "The doc'
    answer = parse_answer(text, CONTENT)
    assert answer.scores == {"semantic": 4, "pragmatic": 2, "syntactic": 5}
    assert answer.reasoning == "" and answer.model_verdict is None


def test_reply_cut_off_inside_scores_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_answer('{"scores": {"semantic": 4, "pragmatic": 2, "synt', CONTENT)


BIG = "9" * 5000  # past Python's 4300-digit int conversion limit
SCORES = '{"semantic": 4, "pragmatic": 4, "syntactic": 5}'


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"a":' * 100_000,
        "Here you go:\n```json\n" + "[" * 100_000 + "\n```",
        "prose first " + '{"a":' * 100_000,
        '{"scores": ' + SCORES + ', "n": ' + BIG + "}",
        "text then " + '{"scores": ' + SCORES + ', "n": ' + BIG + "}",
        "```json\n" + BIG + "\n```",
        # a whole number JSON accepts but no float can hold
        '{"scores": {"semantic": 1' + "0" * 400 + ', "pragmatic": 4, "syntactic": 5}}',
    ],
    ids=[
        "deep-array",
        "deep-object",
        "deep-in-fence",
        "deep-in-prose",
        "huge-int",
        "huge-int-in-prose",
        "huge-int-in-fence",
        "score-overflows-float",
    ],
)
@pytest.mark.parametrize("rubric", [CONTENT, CodeRubric(), CompletionRubric()])
def test_hostile_replies_are_parse_errors(text: str, rubric: Any) -> None:
    """Whatever a model writes, the engine sees a ParseError, never another exception."""
    with pytest.raises(ParseError):
        parse_answer(text, rubric)
