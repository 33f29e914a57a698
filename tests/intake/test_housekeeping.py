"""Retention: finished deliveries are dropped after the retention period, nothing else."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from bot.intake.dispatch import HANDLED_NAMESPACE, Dispatcher
from bot.intake.housekeeping import prune_forever, retention_cutoff
from bot.storage.base import DeliveryStatus, NewDelivery, Storage

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def delivery(delivery_id: str) -> NewDelivery:
    return NewDelivery(delivery_id, "push", None, 1, "o/r", json.dumps({}).encode(), T0)


@pytest.mark.parametrize(
    ("days", "expected"),
    [(30, T0 - timedelta(days=30)), (0.5, T0 - timedelta(hours=12)), (0, None)],
)
def test_retention_cutoff(days: float, expected: datetime | None) -> None:
    assert retention_cutoff(T0, days) == expected


async def test_prune_drops_only_old_finished_deliveries(storage: Storage) -> None:
    for name in ("old-done", "old-failed", "new-done", "pending", "processing"):
        await storage.record_delivery(delivery(name))
    claimed = await storage.claim_deliveries("w", 10, 60, T0)
    assert len(claimed) == 5
    await storage.complete_delivery("old-done", "w", T0)
    await storage.release_delivery("old-failed", "w", "boom", None, T0)
    await storage.complete_delivery("new-done", "w", T0 + timedelta(days=40))
    await storage.release_delivery("pending", "w", "retry", T0 + timedelta(days=1), T0)

    removed = await storage.prune_deliveries(T0 + timedelta(days=1))

    assert removed == 2
    assert await storage.get_delivery("old-done") is None
    assert await storage.get_delivery("old-failed") is None
    for kept in ("new-done", "pending", "processing"):
        assert await storage.get_delivery(kept) is not None
    counts = await storage.count_deliveries()
    assert counts[DeliveryStatus.PROCESSING] == 1


async def test_prune_loop_runs_and_stops(storage: Storage) -> None:
    await storage.record_delivery(delivery("d"))
    await storage.claim_deliveries("w", 1, 60, T0)
    await storage.complete_delivery("d", "w", T0)
    stop = asyncio.Event()
    task = asyncio.create_task(
        prune_forever(storage, 1, lambda: T0 + timedelta(days=2), stop, interval=0.01)
    )
    async with asyncio.timeout(5):
        while await storage.get_delivery("d") is not None:
            await asyncio.sleep(0.01)
    stop.set()
    await task


async def test_handler_memos_are_dropped_once_a_delivery_succeeds(storage: Storage) -> None:
    from gidgethub.routing import Router
    from gidgethub.sansio import Event

    from bot.intake.dispatch import Context

    router = Router()

    @router.register("push")
    async def handler(event: Event, context: Context) -> None:
        del event, context

    await storage.record_delivery(delivery("d"))
    stored = await storage.get_delivery("d")
    assert stored is not None
    await Dispatcher(router, storage)(stored)
    name = f"{handler.__module__}.{handler.__qualname__}"
    assert await storage.kv_get(HANDLED_NAMESPACE, f"d:{name}") is None
