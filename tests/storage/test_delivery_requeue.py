"""Re-queueing a failed delivery (GitHub's "Redeliver", `judge-bot deliveries retry`), run
against SQLite and PostgreSQL like `test_storage.py`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.storage.base import DeliveryStatus, NewDelivery, Storage

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(hours=1)
WORKER = "worker-a"


def delivery(n: int) -> NewDelivery:
    return NewDelivery(
        delivery_id=f"q-{n}",
        event="push",
        action=None,
        installation_id=42,
        repository="octo/repo",
        body=b'{"n":' + str(n).encode() + b"}",
        received_at=T0 + timedelta(seconds=n),
    )


async def park_as_failed(storage: Storage, n: int) -> str:
    """Record delivery `n`, claim it and park it as failed after one attempt."""
    assert await storage.record_delivery(delivery(n))
    [claimed] = await storage.claim_deliveries(WORKER, 1, 60, LATER)
    assert claimed.delivery_id == f"q-{n}"
    assert await storage.release_delivery(claimed.delivery_id, WORKER, "boom", None, LATER)
    return claimed.delivery_id


async def test_a_failed_delivery_is_requeued_pending_due_now_with_attempts_reset(
    storage: Storage,
) -> None:
    delivery_id = await park_as_failed(storage, 1)
    now = LATER + timedelta(minutes=5)
    assert await storage.requeue_failed(delivery_id, now) is True
    queued = await storage.get_delivery(delivery_id)
    assert queued is not None
    assert queued.status is DeliveryStatus.PENDING
    assert queued.attempts == 0
    assert queued.next_attempt_at == now
    assert queued.finished_at is None
    assert queued.lease_owner is None and queued.lease_expires_at is None
    assert queued.last_error == "boom"
    assert queued.body == delivery(1).body
    # Once per redelivery: it is pending now, so a second request changes nothing.
    assert await storage.requeue_failed(delivery_id, now) is False
    [claimed] = await storage.claim_deliveries(WORKER, 5, 60, now)
    assert claimed.delivery_id == delivery_id and claimed.attempts == 1


async def test_pending_processing_done_and_unknown_deliveries_are_untouched(
    storage: Storage,
) -> None:
    assert await storage.record_delivery(delivery(1))
    assert await storage.record_delivery(delivery(2))
    assert await storage.record_delivery(delivery(3))
    [processing] = await storage.claim_deliveries(WORKER, 1, 60, LATER)
    [done] = await storage.claim_deliveries(WORKER, 1, 60, LATER)
    assert await storage.complete_delivery(done.delivery_id, WORKER, LATER)
    before = {d.delivery_id: d for d in await storage.list_deliveries()}
    for delivery_id in ("q-1", "q-2", "q-3", "unknown"):
        assert await storage.requeue_failed(delivery_id, LATER + timedelta(hours=1)) is False
    assert {d.delivery_id: d for d in await storage.list_deliveries()} == before
    assert before[processing.delivery_id].status is DeliveryStatus.PROCESSING
    assert before["q-3"].status is DeliveryStatus.PENDING


async def test_concurrent_requeues_of_one_failed_delivery_have_one_winner(
    storage: Storage,
) -> None:
    delivery_id = await park_as_failed(storage, 1)
    outcomes = await asyncio.gather(*(storage.requeue_failed(delivery_id, LATER) for _ in range(8)))
    assert sorted(outcomes) == [False] * 7 + [True]


async def test_list_deliveries_filters_failed(storage: Storage) -> None:
    await park_as_failed(storage, 1)
    assert await storage.record_delivery(delivery(2))
    failed = await storage.list_deliveries(DeliveryStatus.FAILED, 10)
    assert [d.delivery_id for d in failed] == ["q-1"]
    assert [d.delivery_id for d in await storage.list_deliveries(None, 1)] == ["q-2"]
    assert await storage.requeue_failed("q-1", LATER)
    assert await storage.list_deliveries(DeliveryStatus.FAILED, 10) == []
