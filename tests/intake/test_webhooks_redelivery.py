"""GitHub's "Redeliver": a delivery parked as failed is queued again; any other is a duplicate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.app import METRICS
from bot.intake.dispatch import Context
from bot.storage import storage_from_url
from bot.storage.base import DeliveryStatus
from tests.support.app_helpers import make_settings, running_app
from tests.support.delivery_helpers import until_status
from tests.support.webhook_helpers import example, webhook_headers


class FlakyHandler:
    """A push handler that fails while `failing` is set, counting every call."""

    def __init__(self) -> None:
        self.failing = True
        self.calls: list[str] = []

    def router(self) -> Router:
        router = Router()

        @router.register("push")
        async def handle(event: Event, context: Context) -> None:
            del event
            self.calls.append(context.delivery.delivery_id)
            if self.failing:
                raise RuntimeError("github was down")

        return router


async def test_redelivering_a_failed_delivery_requeues_it_once(
    tmp_path: Path, github_keypair: Any
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path, JUDGE_MAX_ATTEMPTS=2)
    flaky = FlakyHandler()
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, router=flaky.router()) as (client, app):
        body = example("push", "payload")
        headers = webhook_headers("push", body, delivery_id="r-1")
        assert (await client.post(settings.webhook_path, data=body, headers=headers)).status == 202
        await until_status(store, "r-1", DeliveryStatus.FAILED)
        assert flaky.calls == ["r-1", "r-1"]

        flaky.failing = False
        again = await client.post(settings.webhook_path, data=body, headers=headers)
        assert again.status == 202
        assert await again.json() == {"ok": True, "delivery": "r-1", "requeued": True}
        await until_status(store, "r-1", DeliveryStatus.DONE)
        done = await store.get_delivery("r-1")
        assert done is not None and done.attempts == 1 and done.body == body
        assert flaky.calls == ["r-1", "r-1", "r-1"]

        # Done now: a further redelivery is a duplicate and never runs the handler again.
        third = await client.post(settings.webhook_path, data=body, headers=headers)
        assert third.status == 200
        assert (await third.json())["duplicate"] is True
        await asyncio.sleep(0.3)
        assert flaky.calls == ["r-1", "r-1", "r-1"]
        metrics = app[METRICS].render().decode()
    assert 'judge_deliveries_requeued_total{event="push"} 1.0' in metrics
    assert 'judge_deliveries_duplicate_total{event="push"} 1.0' in metrics


def blocking_router(release: asyncio.Event, calls: list[str]) -> Router:
    router = Router()

    @router.register("push")
    async def handle(event: Event, context: Context) -> None:
        del event
        calls.append(context.delivery.delivery_id)
        await release.wait()

    return router


async def test_redelivering_a_processing_or_pending_delivery_is_a_duplicate(
    tmp_path: Path, github_keypair: Any
) -> None:
    """One worker, held by the first delivery (processing), so the second stays pending:
    a redelivery of either is a duplicate, and each runs once."""
    settings = make_settings(github_keypair.private_pem, tmp_path, JUDGE_WORKERS=1)
    release = asyncio.Event()
    calls: list[str] = []
    store = storage_from_url(settings.database_url)
    router = blocking_router(release, calls)
    async with running_app(settings, storage=store, router=router) as (client, _):
        body = example("push", "payload")
        first = webhook_headers("push", body, delivery_id="h-1")
        second = webhook_headers("push", body, delivery_id="h-2")
        assert (await client.post(settings.webhook_path, data=body, headers=first)).status == 202
        await until_status(store, "h-1", DeliveryStatus.PROCESSING)
        assert (await client.post(settings.webhook_path, data=body, headers=second)).status == 202
        for headers in (first, second):
            again = await client.post(settings.webhook_path, data=body, headers=headers)
            assert again.status == 200
            assert (await again.json())["duplicate"] is True
        pending = await store.get_delivery("h-2")
        assert pending is not None and pending.status is DeliveryStatus.PENDING
        release.set()
        await until_status(store, "h-2", DeliveryStatus.DONE)
        await until_status(store, "h-1", DeliveryStatus.DONE)
    assert sorted(calls) == ["h-1", "h-2"]
