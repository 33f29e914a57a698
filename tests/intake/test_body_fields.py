"""What intake reads of a body without decoding it (bot.intake.body_fields), against the full
decode (`json_body.parse_webhook_body`): the same refusals, the same values."""

from __future__ import annotations

import json
import random
import threading
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
import simdjson

from bot.intake import body_fields
from bot.intake.body_fields import FAST_PATH_MAX_BYTES, FAST_PATH_MAX_KEYS, webhook_fields
from bot.intake.json_body import MAX_JSON_DEPTH, BodyRefused, parse_webhook_body
from bot.intake.webhooks import Accepted, check_request
from tests.support.intake_mutations import Mutator
from tests.support.webhook_helpers import SECRET, all_examples, example, webhook_headers

_READ_INSIDE = {"installation": "id", "repository": "full_name"}
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _canonical(value: Any) -> Any:
    """A comparable form that tells True from 1 and 1.0 from 1, and ignores key order."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted((key, _canonical(item)) for key, item in value.items())))
    if isinstance(value, list):
        return ("list", tuple(_canonical(item) for item in value))
    return (type(value).__name__, value)


def _as_intake_reads(payload: dict[str, Any]) -> Any:
    """A decoded payload reduced to what intake reads of it (the fast path's shape)."""
    fields: dict[str, Any] = {}
    for key, value in payload.items():
        member = _READ_INSIDE.get(key)
        if isinstance(value, dict):
            fields[key] = {member: value[member]} if member in value else {}
        elif isinstance(value, list):
            fields[key] = []
        else:
            fields[key] = value
    return _canonical(fields)


def _outcome(read: Any, body: bytes) -> tuple[str, Any]:
    try:
        return ("fields", _as_intake_reads(read(body)))
    except BodyRefused as refused:
        return ("refused", refused.reason)


def _agrees(body: bytes) -> None:
    assert _outcome(webhook_fields, body) == _outcome(parse_webhook_body, body), body[:200]


def test_every_github_example_takes_the_fast_path_and_reads_what_the_full_decode_reads() -> None:
    examples = all_examples()
    assert len(examples) >= 69
    for event, name, body in examples:
        fast = body_fields._fast_fields(body)
        assert fast is not None, (event, name)
        assert _canonical(fast) == _as_intake_reads(json.loads(body)), (event, name)


def test_intake_accepts_a_github_example_without_decoding_it_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_decoding(_: bytes) -> Any:
        raise AssertionError("the body was decoded whole")

    monkeypatch.setattr(orjson, "loads", no_decoding)
    body = example("pull_request_review", "submitted")
    outcome = check_request(webhook_headers("pull_request_review", body), body, SECRET, NOW)
    assert isinstance(outcome, Accepted)
    assert outcome.delivery.action == "submitted"
    assert outcome.delivery.repository == "Codertocat/Hello-World"
    assert outcome.fields["review"] == {} and outcome.fields["pull_request"] == {}


# Raw JSON text put in place of one value somewhere in a real payload, where intake never
# looks: every way simdjson and orjson might disagree about numbers, escapes and bytes.
_RAW_VALUES: tuple[bytes, ...] = (
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"0e99999",
    b"1E+308",
    b"1.7976931348623157e308",
    b"1.7976931348623159e308",
    b"2.5e-324",
    b"-0",
    b"-0.0",
    b"1" * 400,
    b"1" * 20,
    b"18446744073709551615",
    b"18446744073709551616",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"123456789012345678901234567890",
    b"0." + b"1" * 400,
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"NaN",
    b"Infinity",
    b'"\\ud800"',
    b'"\\udc00"',
    b'"\\ud800\\u0041"',
    b'"\\udc00\\ud800"',
    b'"\\ud83d\\ude00"',
    b'"\\u0000"',
    b'"\\u00e9"',
    b'"\\x"',
    b'"\\u12"',
    b'"\xff"',
    b'"\xc0\xaf"',
    b'"\xed\xa0\x80"',
    b'"\xf4\x90\x80\x80"',
    b'"\xe2\x82"',
    b'"caf\xc3\xa9"',
    b'"\x7f"',
    b'"\x1f"',
    b'"tab\there"',
    b"true",
    b"nul",
    b"[]",
    b"{}",
    b'{"a": 1, "a": 2}',
    b"[" * (MAX_JSON_DEPTH - 3) + b"]" * (MAX_JSON_DEPTH - 3),
    b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH,
    b"[" * 1100 + b"]" * 1100,
)


def _with_raw_value(body: bytes, rng: random.Random) -> bytes:
    """`body` with one of its scalar values, chosen at random, replaced by raw text."""
    marker = "\x00marker\x00"
    payload = json.loads(body)
    scalars: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, dict | list):
                walk(value)
            else:
                scalars.append((node, key))

    walk(payload)
    parent, key = rng.choice(scalars)
    parent[key] = marker
    raw = rng.choice(_RAW_VALUES)
    return json.dumps(payload).encode().replace(json.dumps(marker).encode(), raw)


def test_raw_values_anywhere_in_a_payload_are_refused_or_read_as_the_full_decode_does() -> None:
    rng = random.Random(20261123)
    examples = [body for _, _, body in all_examples()]
    for _ in range(1500):
        _agrees(_with_raw_value(rng.choice(examples), rng))


def test_the_intake_fuzzers_requests_are_refused_or_read_as_the_full_decode_does() -> None:
    for request in Mutator(seed=1123).many(1500):
        # Bodies only: those sent compressed are the same bodies, once inflated.
        if request.header("Content-Encoding") is None:
            _agrees(request.body)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"action": "opened", "action": "closed"}', id="top-level-duplicate"),
        pytest.param(b'{"installation": {"id": 1}, "installation": {"id": 2}}', id="object-twice"),
        pytest.param(b'{"installation": {"id": 1, "id": 2}}', id="member-twice"),
        pytest.param(b'{"repository": {"full_name": "a/b", "full_name": 3}}', id="name-twice"),
        pytest.param(b'{"installation": {"node_id": "x", "node_id": "y", "id": 5}}', id="other"),
        pytest.param(b'{"installation": {"id": {"nested": 1}}}', id="id-an-object"),
        pytest.param(b'{"repository": {"full_name": ["a"]}}', id="name-an-array"),
        pytest.param(b'{"installation": [1]}', id="installation-an-array"),
        pytest.param(b'{"action": {"a": 1}}', id="action-an-object"),
        pytest.param(b"\xef\xbb\xbf{}", id="byte-order-mark"),
        pytest.param(b"[1]", id="array"),
        pytest.param(b'"text"', id="string"),
        pytest.param(b"{} {}", id="two-documents"),
        pytest.param(b" \n{}\t", id="whitespace-around"),
        pytest.param(b"", id="empty"),
        pytest.param(b'{"installation": {"id": 18446744073709551616}}', id="id-beyond-64-bits"),
        pytest.param(b'{"installation": {"id": 9223372036854775808}}', id="id-beyond-int64"),
        pytest.param(b'{"x": ' + b"[" * 300 + b"]" * 300 + b"}", id="300-deep"),
    ],
)
def test_edge_cases_are_refused_or_read_as_the_full_decode_does(body: bytes) -> None:
    _agrees(body)


@pytest.mark.parametrize(
    ("body", "last"),
    [
        (b'{"action": "opened", "installation": {"id": 1}, "action": "closed"}', "closed"),
        (b'{"action": "opened", "installation": {"id": 1, "id": 2}}', 2),
    ],
)
def test_a_duplicate_key_intake_reads_takes_the_full_decode_which_keeps_the_last(
    body: bytes, last: Any
) -> None:
    assert body_fields._fast_fields(body) is None
    fields = webhook_fields(body)
    assert last in (fields["action"], fields["installation"]["id"])


@pytest.mark.parametrize("depth", range(MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH + 3))
@pytest.mark.parametrize("leaf", [b"1", b"[]", b"{}", b"[1]", b'{"b": 1}', b'"s"'])
def test_nesting_at_the_limit_is_decided_as_the_full_decode_decides(
    depth: int, leaf: bytes
) -> None:
    rng = random.Random(depth)
    shapes = [
        [(b"[", b"]")] * depth,
        [(b'{"a":', b"}")] * depth,
        [
            rng.choice([(b"[", b"]"), (b'{"a":', b"}"), (b'[1, {"k": ', b"}]")])
            for _ in range(depth)
        ],
    ]
    for shape in shapes:
        opening = b"".join(opener for opener, _ in shape)
        closing = b"".join(closer for _, closer in reversed(shape))
        _agrees(b'{"x": ' + opening + leaf + closing + b"}")


def test_a_body_with_many_brackets_in_its_strings_takes_the_fast_path() -> None:
    """A pull request description full of Markdown links and checklists is no deeper for it."""
    payload = json.loads(example("pull_request", "opened"))
    payload["pull_request"]["body"] = "- [ ] [a link](https://example.com) {x}\n" * 200
    body = json.dumps(payload).encode()
    assert body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH
    assert body_fields._fast_fields(body) is not None
    _agrees(body)


@pytest.mark.parametrize(
    "body",
    [
        b'{"a\\u0000b": 1}',
        b'{"a\\u0000b": 1, "a": 2}',
        b'{"action\\u0000x": "evil", "action": "opened"}',
        b'{"installation\\u0000": {"id": 7}, "installation": {"id": 8}}',
        b'{"installation": {"id\\u0000": 7, "id": 8}}',
    ],
)
def test_a_key_holding_nul_is_read_as_the_full_decode_reads_it(body: bytes) -> None:
    _agrees(body)


def test_an_object_with_many_top_level_keys_takes_the_full_decode() -> None:
    many = {f"key{index}": index for index in range(FAST_PATH_MAX_KEYS + 1)}
    body = json.dumps({"action": "opened", **many}).encode()
    assert body_fields._fast_fields(body) is None
    assert webhook_fields(body)["action"] == "opened"
    fewer = json.dumps({"action": "opened", "key": 1}).encode()
    assert body_fields._fast_fields(fewer) is not None


def test_a_number_beyond_64_bits_keeps_the_threads_parser() -> None:
    parser = body_fields._parser()
    _agrees(b'{"x": -9223372036854775809}')
    assert body_fields._parser() is parser


def test_a_body_past_the_fast_paths_size_is_decoded_whole() -> None:
    padding = "x" * FAST_PATH_MAX_BYTES
    body = json.dumps({"action": "opened", "padding": padding}).encode()
    assert body_fields._fast_fields(body) is None
    fields = webhook_fields(body)
    assert fields["action"] == "opened" and fields["padding"] == padding


def test_a_document_still_held_from_the_threads_parser_costs_only_the_fast_path() -> None:
    held = body_fields._parser().parse(b'{"a": {"b": 1}}')
    assert isinstance(held, simdjson.Object)
    inner = held["a"]
    body = example("push", "payload")
    # The parser refuses to reuse its buffers while `inner` lives: this thread gets another.
    assert webhook_fields(body) == json.loads(body)
    assert isinstance(inner, simdjson.Object) and inner["b"] == 1
    assert body_fields._fast_fields(body) is not None


def test_threads_each_read_with_their_own_parser() -> None:
    bodies = [body for _, _, body in all_examples()]
    failures: list[str] = []

    def read_all() -> None:
        for body in bodies * 5:
            if _canonical(webhook_fields(body)) != _as_intake_reads(json.loads(body)):
                failures.append(body[:80].decode(errors="replace"))

    threads = [threading.Thread(target=read_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_intake_accepts_a_top_level_key_holding_nul_as_it_did_before() -> None:
    body = b'{"zen\\u0000": "x", "action": "opened"}'
    outcome = check_request(webhook_headers("issues", body), body, SECRET, NOW)
    assert isinstance(outcome, Accepted) and outcome.delivery.action == "opened"
