"""Webhook intake: signature, content checks, durable storage before the ack, duplicates."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.intake.json_body import MAX_JSON_DEPTH
from bot.intake.webhooks import (
    MAX_NAME_CHARS,
    Accepted,
    Rejection,
    check_request,
)
from bot.storage import storage_from_url
from bot.storage.base import MAX_BODY_BYTES, DeliveryStatus
from tests.support.app_helpers import make_settings, running_app
from tests.support.delivery_helpers import until_status
from tests.support.webhook_helpers import (
    SECRET,
    all_examples,
    example,
    payload_with,
    sign,
    webhook_headers,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


# -- the pure decision ---------------------------------------------------------------


def test_every_github_example_is_accepted_with_its_routing_fields() -> None:
    """All of GitHub's example payloads pass, and action/installation/repository are read."""
    examples = all_examples()
    assert len(examples) >= 69
    for event, _name, body in examples:
        outcome = check_request(webhook_headers(event, body), body, SECRET, NOW)
        assert isinstance(outcome, Accepted), (event, _name)
        payload = json.loads(body)
        assert outcome.delivery.event == event
        assert outcome.delivery.action == payload.get("action")
        assert outcome.delivery.installation_id == (payload.get("installation") or {}).get("id")
        assert outcome.delivery.repository == (payload.get("repository") or {}).get("full_name")
        assert outcome.delivery.body == body
        # Routing reads these: the payload's own top-level values, or stand-ins for objects.
        assert outcome.fields.keys() == payload.keys()
        assert outcome.fields.get("action") == payload.get("action")


@pytest.mark.parametrize(
    ("mutate", "status", "reason"),
    [
        (
            lambda h, b: (h | {"X-Hub-Signature-256": sign(b, "wrong-secret")}, b),
            401,
            "bad-signature",
        ),
        (
            lambda h, b: ({k: v for k, v in h.items() if k != "X-Hub-Signature-256"}, b),
            401,
            "unsigned",
        ),
        (lambda h, b: (h, b + b" "), 401, "bad-signature"),
        (
            lambda h, b: (h | {"Content-Type": "application/x-www-form-urlencoded"}, b),
            415,
            "content-type",
        ),
        (lambda h, b: ({k: v for k, v in h.items() if k != "X-GitHub-Event"}, b), 400, "no-event"),
        (
            lambda h, b: ({k: v for k, v in h.items() if k != "X-GitHub-Delivery"}, b),
            400,
            "no-delivery-id",
        ),
    ],
    ids=[
        "wrong-secret",
        "no-signature",
        "tampered-body",
        "form-encoded",
        "no-event",
        "no-delivery",
    ],
)
def test_refusals(mutate: Any, status: int, reason: str) -> None:
    body = example("push", "payload")
    headers, sent = mutate(webhook_headers("push", body), body)
    outcome = check_request(headers, sent, SECRET, NOW)
    assert isinstance(outcome, Rejection)
    assert (outcome.status, outcome.reason) == (status, reason)


def test_signed_garbage_is_400_and_unsigned_garbage_is_401() -> None:
    garbage = b"{not json"
    signed = check_request(webhook_headers("push", garbage), garbage, SECRET, NOW)
    assert isinstance(signed, Rejection) and signed.status == 400
    unsigned = check_request({"Content-Type": "application/json"}, garbage, SECRET, NOW)
    assert isinstance(unsigned, Rejection) and unsigned.status == 401


def test_json_that_is_not_an_object_is_400() -> None:
    body = b"[1, 2]"
    outcome = check_request(webhook_headers("push", body), body, SECRET, NOW)
    assert isinstance(outcome, Rejection) and outcome.reason == "not-json"


def test_oversize_body_is_413_before_signature_work() -> None:
    body = b" " * (MAX_BODY_BYTES + 1)
    outcome = check_request({}, body, SECRET, NOW)
    assert isinstance(outcome, Rejection) and outcome.status == 413


def test_header_names_are_case_insensitive() -> None:
    body = example("push", "payload")
    headers = {key.lower(): value for key, value in webhook_headers("push", body).items()}
    assert isinstance(check_request(headers, body, SECRET, NOW), Accepted)


# -- hostile but signed: every value read from the body is stored faithfully or refused --

INT64_MAX = 2**63 - 1
PUSH_BYTES = example("push", "payload")
PUSH = json.loads(PUSH_BYTES) | {"installation": {"id": 42}}


def signed_check(body: bytes, **header_changes: str) -> Rejection | Accepted:
    return check_request(webhook_headers("push", body) | header_changes, body, SECRET, NOW)


def with_raw(raw: str, **changes: Any) -> bytes:
    """The push example with `changes`, where the string "RAW" becomes the JSON token `raw`."""
    return json.dumps(PUSH | changes).replace('"RAW"', raw).encode()


def nested(depth: int) -> bytes:
    return with_raw("[" * depth + "1" + "]" * depth, extra="RAW")


@pytest.mark.parametrize(
    ("body", "field", "expected"),
    [
        (payload_with(PUSH_BYTES, installation={"id": 1}), "installation_id", 1),
        (
            payload_with(PUSH_BYTES, installation={"id": INT64_MAX}),
            "installation_id",
            INT64_MAX,
        ),
        (payload_with(PUSH_BYTES, installation=None), "installation_id", None),
        (payload_with(PUSH_BYTES, installation={}), "installation_id", None),
        (
            payload_with(PUSH_BYTES, installation={"id": None}),
            "installation_id",
            None,
        ),
        (payload_with(PUSH_BYTES, action=None), "action", None),
        (payload_with(PUSH_BYTES, action=""), "action", ""),
        (payload_with(PUSH_BYTES, action="caf\u00e9"), "action", "caf\u00e9"),
        (
            payload_with(PUSH_BYTES, action="a" * MAX_NAME_CHARS),
            "action",
            "a" * MAX_NAME_CHARS,
        ),
        (payload_with(PUSH_BYTES, repository=None), "repository", None),
        (payload_with(PUSH_BYTES, repository={}), "repository", None),
        # Python's json keeps the last of duplicate keys, and so does the worker's parse.
        (b'{"action": "first", "action": "last"}', "action", "last"),
        (
            b'{"installation": {"id": 18446744073709551616}, "installation": {"id": 7}}',
            "installation_id",
            7,
        ),
        # Numbers the body carries but intake does not store are left alone.
        (with_raw(str(10**40), extra="RAW"), "installation_id", 42),
        (with_raw("1e-400", extra="RAW"), "installation_id", 42),
        (nested(MAX_JSON_DEPTH - 1), "installation_id", 42),
    ],
    ids=[
        "id-1",
        "id-int64-max",
        "installation-null",
        "installation-without-id",
        "id-null",
        "action-null",
        "action-empty",
        "action-non-ascii",
        "action-longest",
        "repository-null",
        "repository-without-name",
        "duplicate-action",
        "duplicate-installation",
        "huge-int-elsewhere",
        "underflow-elsewhere",
        "deepest-allowed",
    ],
)
def test_hostile_values_that_can_be_stored_are_stored_faithfully(
    body: bytes, field: str, expected: Any
) -> None:
    outcome = signed_check(body)
    assert isinstance(outcome, Accepted)
    assert getattr(outcome.delivery, field) == expected
    assert outcome.delivery.body == body


BAD_IDS: tuple[Any, ...] = (INT64_MAX + 1, 2**64, 0, -1, -(2**63), 1.0, 1.5, "1", True, [1], {})
BAD_OBJECTS: tuple[Any, ...] = ([], [{"id": 1}], "1", 1, True)
BAD_NAMES: tuple[Any, ...] = (
    1,
    True,
    ["opened"],
    {"a": 1},
    "a" * (MAX_NAME_CHARS + 1),
    "a\x00b",
)
# Escapes no UTF-8 text holds, refused wherever they are: the worker must read what intake read.
UNPAIRED_SURROGATES = ("\ud800", "lone \udfff low")
BAD_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" * 400, "1" * 5000)


def refusal_cases() -> list[Any]:
    """(body, reason, a word the message must say), each with a readable id."""
    push = PUSH_BYTES
    cases = [
        *(
            pytest.param(
                payload_with(push, installation={"id": v}), "bad-field", "id", id=f"id={v!r}"
            )
            for v in BAD_IDS
        ),
        *(
            pytest.param(
                payload_with(push, installation=v),
                "bad-field",
                "installation",
                id=f"installation={v!r}",
            )
            for v in BAD_OBJECTS
        ),
        *(
            pytest.param(
                payload_with(push, repository=v), "bad-field", "repository", id=f"repository={v!r}"
            )
            for v in BAD_OBJECTS
        ),
        *(
            pytest.param(
                payload_with(push, action=v), "bad-field", "action", id=f"action={v!r:.20}"
            )
            for v in BAD_NAMES
        ),
        *(
            pytest.param(
                payload_with(push, repository={"full_name": v}),
                "bad-field",
                "repository.full_name",
                id=f"full_name={v!r:.20}",
            )
            for v in BAD_NAMES
        ),
        *(
            pytest.param(
                payload_with(push, **{field: v}), "not-json", "surrogate", id=f"{field}={v!r:.20}"
            )
            for v in UNPAIRED_SURROGATES
            for field in ("action", "comment")
        ),
        *(
            pytest.param(with_raw(token, extra="RAW"), "bad-number", "number", id=token[:10])
            for token in BAD_NUMBERS
        ),
        pytest.param(
            with_raw("1e400", installation={"id": "RAW"}), "bad-number", "number", id="id=1e400"
        ),
        pytest.param(nested(MAX_JSON_DEPTH), "too-deep", "nested", id="one-level-too-deep"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "too-deep", "nested", id="deep-list"),
        pytest.param(b'{"a": ' + b"[" * 100_000, "too-deep", "nested", id="deep-unclosed"),
        pytest.param(
            b'{"a": ' * 100_001 + b"1" + b"}" * 100_001, "too-deep", "nested", id="deep-objects"
        ),
        pytest.param(b'{"action": "\xff"}', "not-utf8", "UTF-8", id="invalid-utf8"),
        pytest.param(b'{"action": "\xed\xa0\x80"}', "not-utf8", "UTF-8", id="utf8-surrogate"),
        pytest.param('{"a": 1}'.encode("utf-16"), "not-utf8", "UTF-8", id="utf16"),
        pytest.param(b"\xef\xbb\xbf" + push, "not-json", "JSON", id="bom"),
        pytest.param(b"", "not-json", "JSON", id="empty"),
        pytest.param(b"null", "not-json", "object", id="null"),
    ]
    return cases


@pytest.mark.parametrize(("body", "reason", "words"), refusal_cases())
def test_hostile_values_that_cannot_be_stored_are_400(body: bytes, reason: str, words: str) -> None:
    outcome = signed_check(body)
    assert isinstance(outcome, Rejection), outcome
    assert (outcome.status, outcome.reason) == (400, reason)
    assert words in outcome.message


@pytest.mark.parametrize(
    ("header", "value", "status", "reason"),
    [
        ("X-GitHub-Event", "p\u00fcsh", 400, "bad-event"),
        ("X-GitHub-Event", "push\udcff", 400, "bad-event"),
        ("X-GitHub-Event", "pu\x00sh", 400, "bad-event"),
        ("X-GitHub-Event", "e" * (MAX_NAME_CHARS + 1), 400, "bad-event"),
        ("X-GitHub-Delivery", "d\udcff", 400, "bad-delivery-id"),
        ("X-GitHub-Delivery", "d\x00", 400, "bad-delivery-id"),
        ("X-GitHub-Delivery", "d" * 201, 400, "bad-delivery-id"),
        ("X-GitHub-Delivery", "   ", 400, "no-delivery-id"),
        ("X-Hub-Signature-256", "sha256=\u00e9", 401, "bad-signature"),
        ("X-Hub-Signature-256", "sha256=\udcff", 401, "bad-signature"),
    ],
)
def test_hostile_headers_are_4xx(header: str, value: str, status: int, reason: str) -> None:
    outcome = signed_check(example("push", "payload"), **{header: value})
    assert isinstance(outcome, Rejection)
    assert (outcome.status, outcome.reason) == (status, reason)


def test_headers_at_their_limits_are_stored_as_sent() -> None:
    body = example("push", "payload")
    outcome = signed_check(
        body, **{"X-GitHub-Event": "e" * MAX_NAME_CHARS, "X-GitHub-Delivery": " d" * 100}
    )
    assert isinstance(outcome, Accepted)
    assert outcome.delivery.event == "e" * MAX_NAME_CHARS
    assert outcome.delivery.delivery_id == (" d" * 100).strip()


def test_a_sha1_signature_in_the_sha256_header_is_refused() -> None:
    """gidgethub would verify `sha1=` here too; the weaker hash must not be the sender's pick."""
    body = example("push", "payload")
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    outcome = signed_check(body, **{"X-Hub-Signature-256": sha1})
    assert isinstance(outcome, Rejection)
    assert (outcome.status, outcome.reason) == (401, "bad-signature")


@pytest.mark.parametrize(
    "body",
    [nested(100_000), with_raw("NaN", extra="RAW"), b"\xff", payload_with(b"{}", action=1)],
    ids=["deep", "nan", "not-utf8", "bad-action"],
)
def test_nothing_in_the_body_is_looked_at_before_the_signature(body: bytes) -> None:
    outcome = check_request(
        webhook_headers("push", body, secret="not-the-secret"), body, SECRET, NOW
    )
    assert isinstance(outcome, Rejection)
    assert (outcome.status, outcome.reason) == (401, "bad-signature")


# -- through the real server ----------------------------------------------------------


def recording_router(seen: list[tuple[str, str]]) -> Router:
    router = Router()

    @router.register("push")
    @router.register("pull_request")
    async def record(event: Event, context: Context) -> None:
        seen.append((event.event, context.delivery.delivery_id))

    return router


async def delivery_status(store: Any, delivery_id: str) -> DeliveryStatus | None:
    stored = await store.get_delivery(delivery_id)
    return None if stored is None else stored.status


async def test_signed_delivery_is_stored_before_ack_then_processed_once(
    tmp_path: Path, github_keypair: Any
) -> None:
    """202 means stored; a redelivery with the same id is 200 and never processed again."""
    settings = make_settings(github_keypair.private_pem, tmp_path)
    seen: list[tuple[str, str]] = []
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, router=recording_router(seen)) as (client, _):
        body = example("push", "payload")
        headers = webhook_headers("push", body, delivery_id="d-1")
        response = await client.post(settings.webhook_path, data=body, headers=headers)
        assert response.status == 202
        stored = await store.get_delivery("d-1")
        assert stored is not None and stored.body == body
        await until_status(store, "d-1", DeliveryStatus.DONE)
        again = await client.post(settings.webhook_path, data=body, headers=headers)
        assert again.status == 200
        assert (await again.json())["duplicate"] is True
        # Give the workers several poll intervals to (wrongly) pick it up again.
        await asyncio.sleep(0.3)
    assert seen == [("push", "d-1")]


@pytest.mark.parametrize(
    ("headers_for", "body", "status"),
    [
        (lambda b: webhook_headers("push", b, secret="nope"), example("push", "payload"), 401),
        (
            lambda b: {
                "Content-Type": "application/json",
                "X-GitHub-Event": "push",
                "X-GitHub-Delivery": "x",
            },
            example("push", "payload"),
            401,
        ),
        (lambda b: webhook_headers("push", b), b"{broken", 400),
        (
            lambda b: webhook_headers("push", b, content_type="text/plain"),
            example("push", "payload"),
            415,
        ),
    ],
    ids=["bad-signature", "missing-signature", "malformed-json", "wrong-content-type"],
)
async def test_refused_requests_store_nothing(
    tmp_path: Path, github_keypair: Any, headers_for: Any, body: bytes, status: int
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        response = await client.post(settings.webhook_path, data=body, headers=headers_for(body))
        assert response.status == status
        counts = await store.count_deliveries()
        assert sum(counts.values()) == 0


async def test_oversize_request_is_413(tmp_path: Path, github_keypair: Any) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        body = b"{" + b" " * MAX_BODY_BYTES + b"}"
        response = await client.post(
            settings.webhook_path, data=io.BytesIO(body), headers=webhook_headers("push", body)
        )
        assert response.status == 413
        assert sum((await store.count_deliveries()).values()) == 0


async def test_ping_is_200_and_not_stored(tmp_path: Path, github_keypair: Any) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        response = await client.post(
            settings.webhook_path, data=body, headers=webhook_headers("ping", body)
        )
        assert response.status == 200
        assert sum((await store.count_deliveries()).values()) == 0


async def test_unknown_event_is_accepted_and_completes_without_handlers(
    tmp_path: Path, github_keypair: Any
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store) as (client, _):
        body = json.dumps({"action": "created", "sponsorship": {}}).encode()
        headers = webhook_headers("sponsorship", body, delivery_id="u-1")
        assert (await client.post(settings.webhook_path, data=body, headers=headers)).status == 202

        await until_status(store, "u-1", DeliveryStatus.DONE)


async def test_concurrent_identical_deliveries_store_one(
    tmp_path: Path, github_keypair: Any
) -> None:
    """GitHub may redeliver while the first attempt is in flight: exactly one is kept."""
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        body = example("pull_request", "opened")
        headers = webhook_headers("pull_request", body, delivery_id="same")
        responses = await asyncio.gather(
            *(client.post(settings.webhook_path, data=body, headers=headers) for _ in range(10))
        )
        statuses = sorted(r.status for r in responses)
        assert statuses == [200] * 9 + [202]
        assert (await store.count_deliveries())[DeliveryStatus.PENDING] == 1


async def test_deeply_nested_body_is_400_through_the_server(
    tmp_path: Path, github_keypair: Any
) -> None:
    """100,000 brackets used to blow the parser's recursion limit and answer 500."""
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        for body in (nested(100_000), b"[" * 100_000):
            response = await client.post(
                settings.webhook_path, data=body, headers=webhook_headers("push", body)
            )
            assert response.status == 400
            assert "nested deeper than" in (await response.json())["error"]
        assert sum((await store.count_deliveries()).values()) == 0


async def test_installation_id_beyond_int64_is_400_and_its_neighbours_are_stored(
    tmp_path: Path, github_keypair: Any
) -> None:
    """2^63 used to overflow the SQLite insert and fail the commit it shared with others."""
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    push = example("push", "payload")
    bodies = {
        "too-big": payload_with(push, installation={"id": INT64_MAX + 1}),
        "largest": payload_with(push, installation={"id": INT64_MAX}),
        "plain": push,
    }
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        # Together, so they land in one group commit as GitHub's bursts do.
        responses = await asyncio.gather(
            *(
                client.post(
                    settings.webhook_path,
                    data=body,
                    headers=webhook_headers("push", body, delivery_id=name),
                )
                for name, body in bodies.items()
            )
        )
        statuses = {name: r.status for name, r in zip(bodies, responses, strict=True)}
        assert statuses == {"too-big": 400, "largest": 202, "plain": 202}
        assert "installation.id" in (await responses[0].json())["error"]
        assert await store.get_delivery("too-big") is None
        largest = await store.get_delivery("largest")
        assert largest is not None and largest.installation_id == INT64_MAX
        assert largest.body == bodies["largest"]
        assert sum((await store.count_deliveries()).values()) == 2


async def test_a_compressed_body_is_refused_before_it_is_read(
    tmp_path: Path, github_keypair: Any
) -> None:
    """aiohttp inflates gzip and deflate bodies as they arrive; GitHub never compresses a
    delivery, so any coding is refused (415) before the body is read or inflated."""
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        for encoding in ("gzip", "deflate"):
            body = b"this is not " + encoding.encode()
            headers = webhook_headers("push", body) | {"Content-Encoding": encoding}
            response = await client.post(settings.webhook_path, data=body, headers=headers)
            assert response.status == 415
            assert "must not be compressed" in (await response.json())["error"]
        assert sum((await store.count_deliveries()).values()) == 0
