"""Webhook intake (`bot/intake/webhooks.py`), what follows the checks: a delivery no handler
subscribes to is stored done and never queued; a queued one is processed from its stored
body. The checks themselves and durability are in test_webhooks.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.storage import storage_from_url
from bot.storage.base import DeliveryStatus
from tests.support.app_helpers import make_settings, running_app
from tests.support.delivery_helpers import until_status
from tests.support.webhook_helpers import example, webhook_headers


def push_router(seen: list[tuple[str, Any]]) -> Router:
    router = Router()

    @router.register("push")
    async def record(event: Event, context: Context) -> None:
        seen.append((context.delivery.delivery_id, event.data))

    return router


async def test_a_delivery_nothing_subscribes_to_is_done_at_intake(
    tmp_path: Path, github_keypair: Any
) -> None:
    """No worker runs here: 202 already means stored and finished, and it is never queued."""
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(
        settings, storage=store, router=push_router([]), start_workers=False
    ) as (client, _):
        body = example("pull_request_review", "submitted")
        headers = webhook_headers("pull_request_review", body, delivery_id="r-1")
        response = await client.post(settings.webhook_path, data=body, headers=headers)
        assert response.status == 202
        assert await response.json() == {"ok": True, "delivery": "r-1"}
        stored = await store.get_delivery("r-1")
        assert stored is not None and stored.status is DeliveryStatus.DONE
        assert stored.attempts == 0 and stored.finished_at == stored.received_at
        assert (stored.action, stored.body) == ("submitted", body)
        again = await client.post(settings.webhook_path, data=body, headers=headers)
        assert again.status == 200 and (await again.json())["duplicate"] is True
        text = await (await client.get("/metrics")).text()
    assert 'judge_deliveries_received_total{event="pull_request_review"} 1.0' in text
    assert 'judge_deliveries_processed_total{event="pull_request_review"} 1.0' in text
    assert 'judge_deliveries_duplicate_total{event="pull_request_review"} 1.0' in text


async def test_a_subscribed_delivery_is_queued_and_a_redelivery_keeps_the_stored_body(
    tmp_path: Path, github_keypair: Any
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    seen: list[tuple[str, Any]] = []
    async with running_app(
        settings, storage=store, router=push_router(seen), start_workers=False
    ) as (client, _):
        body = example("push", "payload")
        headers = webhook_headers("push", body, delivery_id="q-1")
        assert (await client.post(settings.webhook_path, data=body, headers=headers)).status == 202
        stored = await store.get_delivery("q-1")
        assert stored is not None and stored.status is DeliveryStatus.PENDING
        # A redelivery with other bytes under the same id leaves the stored body.
        other = json.dumps({"ref": "forged"}).encode()
        forged = webhook_headers("push", other, delivery_id="q-1")
        assert (await client.post(settings.webhook_path, data=other, headers=forged)).status == 200
        again = await store.get_delivery("q-1")
        assert again is not None and again.body == body


async def test_the_worker_processes_a_queued_delivery_once_from_its_stored_body(
    tmp_path: Path, github_keypair: Any
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    seen: list[tuple[str, Any]] = []
    async with running_app(settings, storage=store, router=push_router(seen)) as (client, _):
        body = example("push", "payload")
        headers = webhook_headers("push", body, delivery_id="w-1")
        assert (await client.post(settings.webhook_path, data=body, headers=headers)).status == 202
        await until_status(store, "w-1")
        assert seen == [("w-1", json.loads(body))]
