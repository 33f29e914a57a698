"""Webhook intake: signature, content checks, durable storage before the ack, duplicates."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.intake.webhooks import MAX_BODY_BYTES, Accepted, Rejection, check_request
from bot.storage import storage_from_url
from bot.storage.base import DeliveryStatus
from tests.support.app_helpers import make_settings, running_app
from tests.support.webhook_helpers import SECRET, all_examples, example, sign, webhook_headers

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


async def until_status(store: Any, delivery_id: str, status: DeliveryStatus) -> None:
    async with asyncio.timeout(10):
        while await delivery_status(store, delivery_id) is not status:
            await asyncio.sleep(0.02)


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
