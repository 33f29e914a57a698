"""The webhook body decoder: orjson on the fast path, the standard library naming refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.intake.json_body import MAX_JSON_DEPTH, BodyRefused, decode_stored, parse_webhook_body

WEBHOOKS = Path(__file__).parent.parent / "fixtures" / "github" / "webhooks"
EXAMPLES = sorted(WEBHOOKS.rglob("*.json"))


def test_there_are_examples_to_compare() -> None:
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: str(path.relative_to(WEBHOOKS)))
def test_every_github_example_decodes_as_the_standard_library_does(path: Path) -> None:
    body = path.read_bytes()
    expected = json.loads(body)
    assert parse_webhook_body(body) == expected
    assert decode_stored(body) == expected


def test_a_row_stored_before_orjson_still_decodes_for_the_worker() -> None:
    # The standard library accepted an unpaired surrogate escape; orjson refuses it.
    body = b'{"action": "opened", "comment": {"body": "\\ud800"}}'
    assert decode_stored(body) == {"action": "opened", "comment": {"body": "\ud800"}}
    with pytest.raises(BodyRefused) as refused:
        parse_webhook_body(body)
    assert refused.value.reason == "not-json"
    assert "surrogate" in refused.value.message


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"a": ' + b"9" * 400 + b"}", "bad-number"),
        (b'{"a": 1e999}', "bad-number"),
        (b'{"a": NaN}', "bad-number"),
        (b'{"a": 1,}', "not-json"),
        (b'{"a": "\x01"}', "not-json"),
        (b'{"a": 1} trailing', "not-json"),
        (b"[1, 2]", "not-json"),
        (b"[" * 1025 + b"]" * 1025, "too-deep"),
        (b'{"a": "\xc3"}', "not-utf8"),
    ],
)
def test_a_refusal_names_what_is_wrong(body: bytes, reason: str) -> None:
    with pytest.raises(BodyRefused) as refused:
        parse_webhook_body(body)
    assert refused.value.reason == reason


def test_big_integers_within_64_bits_stay_integers() -> None:
    payload = parse_webhook_body(b'{"installation": {"id": 9223372036854775807}}')
    assert payload["installation"]["id"] == 2**63 - 1
    assert type(payload["installation"]["id"]) is int


def _nest(levels: int, leaf: bytes, *, objects: bool) -> bytes:
    """`levels` containers in all, the outermost an object, around `leaf`."""
    opener, closer = (b'{"k": ', b"}") if objects else (b"[", b"]")
    return b'{"k": ' + opener * (levels - 1) + leaf + closer * (levels - 1) + b"}"


@pytest.mark.parametrize("objects", [True, False], ids=["objects", "lists"])
@pytest.mark.parametrize(
    "leaf",
    [
        b"1",
        b"-9223372036854775808",
        b"18446744073709551615",
        b"1e308",
        b"1e-400",
        b"true",
        b"null",
        b'"\\u0000\\ud83d\\ude00"',
        b"{}",
        b"[]",
    ],
)
def test_nesting_up_to_the_limit_is_accepted_and_one_more_level_is_not(
    leaf: bytes, *, objects: bool
) -> None:
    """The depth check is orjson's serialiser refusing to nest deeper than its own limit;
    this pins that limit to MAX_JSON_DEPTH, and shows no value a payload can hold makes it
    refuse for another reason. An empty container at the bottom is a level of its own."""
    extra = 1 if leaf in (b"{}", b"[]") else 0
    parse_webhook_body(_nest(MAX_JSON_DEPTH - extra, leaf, objects=objects))
    with pytest.raises(BodyRefused) as refused:
        parse_webhook_body(_nest(MAX_JSON_DEPTH + 1 - extra, leaf, objects=objects))
    assert refused.value.reason == "too-deep"
    assert f"deeper than {MAX_JSON_DEPTH} levels" in refused.value.message


def test_a_deep_branch_beside_shallow_ones_is_found() -> None:
    deep = _nest(MAX_JSON_DEPTH, b"1", objects=False)
    body = b'{"a": [1, {"b": 2}], "z": ' + deep + b', "y": {"c": []}}'
    with pytest.raises(BodyRefused) as refused:
        parse_webhook_body(body)
    assert refused.value.reason == "too-deep"
