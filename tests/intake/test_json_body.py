"""The webhook body decoder: orjson on the fast path, the standard library naming refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.intake.json_body import BodyRefused, decode_stored, parse_webhook_body

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
