"""Replies written to make the verdict search (`bot/judge/rubrics/parsing.py`) and the completion
rubric's list merging quadratic: braces that never close, objects that never decode,
many verdict objects, long lists. Each is read in about a second where the old code
took minutes on the App's event loop; and the shapes a model really writes around
its object are still read as before."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.judge.rubrics import ContentRubric
from bot.judge.rubrics.completion import CompletionRubric
from bot.judge.rubrics.parsing import (
    _FAILED_DECODES_LIMIT,
    ParseError,
    extract_json_object,
    parse_answer,
)
from tests.support.hostile_runner import assert_each_finishes
from tests.support.rubric_helpers import completion

SCORES = {"semantic": 4, "pragmatic": 2, "syntactic": 5}
VERDICT = {"verdict": "accept", "scores": SCORES}


@pytest.mark.parametrize(
    "prose",
    [
        'He said "hi. ',
        '12" ruler, ',
        'say \\"hi ',
        "Use {braces carefully. ",
        "fn main() { let x = {}; ",
        "}}} {{{ ",
        "a {x} b {",
    ],
)
def test_the_verdict_is_found_after_stray_quotes_and_braces(prose: str) -> None:
    assert extract_json_object(prose + json.dumps(VERDICT) + " done") == VERDICT


def test_an_object_with_braces_quotes_and_backslashes_in_its_strings_is_read_whole() -> None:
    obj = {**VERDICT, "reasoning": 'a "}" and { and C:\\ and \\" and \\\\"{'}
    assert extract_json_object("Answer: " + json.dumps(obj) + " {") == obj


def test_objects_inside_a_malformed_outer_object_are_still_found() -> None:
    text = '{"scores": ' + json.dumps(SCORES) + ', "reasoning": "uses {x} and \\"}\\"",}'
    assert extract_json_object(text) == SCORES
    assert parse_answer(text, ContentRubric()).scores == SCORES


def test_an_object_inside_a_string_of_a_malformed_object_is_found_as_before() -> None:
    """Each `{` after a failed one is tried, even one the failed object held in a string."""
    assert extract_json_object('{"a": "returns {} here", oops}') == {}


def test_objects_after_a_valid_one_are_not_searched_inside_it() -> None:
    outer = {"note": {"pass": True}, "other": 1}
    assert extract_json_object("x " + json.dumps(outer) + " y") == outer


def test_a_huge_number_in_a_cut_off_object_no_longer_refuses_the_reply() -> None:
    """Behaviour change: a `{` that is never closed is passed over without decoding it,
    so a complete scores object inside it decides, as for any other cut-off reply."""
    text = 'Verdict: {"scores": ' + json.dumps(SCORES) + ', "n": ' + "9" * 5000
    assert parse_answer(text, ContentRubric()).scores == SCORES


def test_a_huge_number_in_a_closed_object_still_refuses_the_reply() -> None:
    with pytest.raises(ParseError, match="unreadable JSON value"):
        extract_json_object('Verdict: {"scores": {}, "n": ' + "9" * 5000 + "}")


def test_too_many_nested_malformed_objects_are_refused() -> None:
    with pytest.raises(ParseError, match="malformed JSON"):
        extract_json_object('{"a":1,' * 2000 + "}" * 2000 + json.dumps(VERDICT))


def test_a_reply_with_too_many_malformed_objects_is_refused() -> None:
    malformed = '{"a"} ' * _FAILED_DECODES_LIMIT
    assert extract_json_object(malformed + json.dumps(VERDICT)) == VERDICT
    with pytest.raises(ParseError, match="malformed JSON"):
        extract_json_object(malformed + '{"a"} ' + json.dumps(VERDICT))


def test_three_different_verdict_objects_are_ambiguous() -> None:
    with pytest.raises(ParseError, match="ambiguous"):
        extract_json_object('{"pass": 1} {"pass": 1} {"pass": 2} {"pass": 3}')


def test_equal_verdict_objects_are_one_even_when_spelled_differently() -> None:
    assert extract_json_object('{"pass": 1} and {"pass": 1.0}') == {"pass": 1}


def _repeat(unit: str, size: int) -> str:
    return unit * (size // len(unit))


def _numbered_verdicts(size: int) -> str:
    return " ".join(f'{{"pass":{n}}}' for n in range(size // 12))


def _completion_with_long_lists(count: int) -> Any:
    return CompletionRubric().parse(
        completion(
            missing_items=[f"missing item {n}" for n in range(count)],
            suggested_next_steps=[f"next step {n}" for n in range(count)],
        )
    )


def _extract(text: str) -> object:
    try:
        return extract_json_object(text)
    except ParseError as refused:
        return refused


MB = 1_000_000
# Each took the old code between one and several minutes (quadratic: a failed decode at
# every `{` counted the lines before it, and each verdict object was compared with all
# before it); each now takes about a second or less.
HOSTILE: dict[str, Callable[[], object]] = {
    "braces never closed": lambda: _extract("{" * MB),
    "braces never closed, lines": lambda: _extract(_repeat("{" * 79 + "\n", MB)),
    "braces in prose": lambda: _extract(_repeat("x{", 2 * MB)),
    "unclosed nested keys": lambda: _extract(_repeat('{"a":' * 50 + "x", 2 * MB)),
    "objects that never decode": lambda: _extract(_repeat('{"a"} ', 2 * MB)),
    "escaped quotes shifting strings": lambda: _extract('{"' + _repeat('"{\\""', 2 * MB)),
    "backslash runs": lambda: _extract(_repeat('{"\\\\\\\\\\"', 2 * MB)),
    "quoted objects in a string": lambda: _extract('{"a":"' + _repeat('{"b":"\\"}', 2 * MB)),
    "many different verdicts": lambda: _extract(_numbered_verdicts(2 * MB)),
    "completion, long lists": lambda: _completion_with_long_lists(100_000),
}


def test_every_hostile_reply_is_read_in_linear_time() -> None:
    assert_each_finishes("tests.judge.test_parsing_hostile", "HOSTILE")
